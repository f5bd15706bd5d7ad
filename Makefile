# Conventional entry points. Every target installs what it needs first (idempotent).
BUILD_DIR ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: deps configure build build-demo install test configure-sanitize build-sanitize test-sanitize build-fuzz fuzz \
        demo bench format lint clean images images-from-binaries

deps:
	./scripts/install-deps.sh

# Unity builds: about half the compile time from scratch; Ninja (and lld, CMakeLists.txt)
# for the rest (docs/testing.md "CI"). A build directory made by an older checkout with
# Unix Makefiles: `make clean` first (CMake refuses to change a directory's generator).
GENERATOR ?= Ninja
configure: deps
	cmake -S . -B $(BUILD_DIR) -G $(GENERATOR) -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DCOMMGATE_UNITY_BUILD=ON $(CMAKE_FLAGS) >/dev/null

build: configure
	cmake --build $(BUILD_DIR) -j$(JOBS)

# A failed test runs once more: the multi-process tests share 2 cores (docs/testing.md
# "CI": the known flake); a real defect fails both runs.
# The commands on PATH: commgate, commgate-probe and the kubectl plugin kubectl-commgate
# (`kubectl commgate ...`, docs/cli.md). PREFIX=/usr/local by default.
PREFIX ?= /usr/local
install: build-demo
	cmake --build $(BUILD_DIR) -j$(JOBS) --target kubectl-commgate
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 0755 $(BUILD_DIR)/bin/commgate $(BUILD_DIR)/bin/kubectl-commgate $(DESTDIR)$(PREFIX)/bin/
	if [ -x $(BUILD_DIR)/bin/commgate-probe ]; then \
	  install -m 0755 $(BUILD_DIR)/bin/commgate-probe $(DESTDIR)$(PREFIX)/bin/; fi

test: build
	cd $(BUILD_DIR) && ctest --output-on-failure -j$(JOBS) --repeat until-pass:2 $(CTEST_FLAGS)

# The CPU-only parts (no LibTorch) again under AddressSanitizer and UBSan: the unit tests
# and the integration tests of the parsers, the servers, the Kubernetes client's threads,
# the simulated cluster's store and API, the reconcilers, the real binaries and the fault
# tests. The end-to-end tests (kubectl, the Python client, the chart, network namespaces,
# the 10,000-pod scale test) run in `make test` only: COMMGATE_BUILD_E2E_TESTS=OFF does not
# build them here (docs/testing.md "CI" has the table). clang: it compiles this
# instrumented -O0 build in half GCC's time (one test-support batch: 56 s against 109 s of
# CPU); GCC builds `make test`. Shared libraries: one link of each instrumented library
# instead of one per test program. Under the sanitizers' slowdown a test that failed gets
# one more run; a real defect fails both.
configure-sanitize: deps
	cmake -S . -B $(BUILD_DIR)-asan -G $(GENERATOR) -DCMAKE_CXX_COMPILER=clang++ \
	  -DCMAKE_BUILD_TYPE=Debug -DCOMMGATE_SANITIZE=ON \
	  -DCOMMGATE_UNITY_BUILD=ON -DCOMMGATE_BUILD_PROBE=OFF -DCOMMGATE_BUILD_BENCH=OFF \
	  -DCOMMGATE_BUILD_E2E_TESTS=OFF -DCOMMGATE_LIBRARY_TYPE=SHARED \
	  -DCMAKE_CXX_FLAGS=-fsanitize=fuzzer-no-link >/dev/null

build-sanitize: configure-sanitize
	cmake --build $(BUILD_DIR)-asan -j$(JOBS)

test-sanitize: build-sanitize
	cd $(BUILD_DIR)-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  LSAN_OPTIONS=suppressions=$(CURDIR)/tests/sanitizers/lsan.supp \
	  ctest --output-on-failure -j$(JOBS) -LE 'netns|scale|e2e|fuzz' --repeat until-pass:2

# The webhook's AdmissionReview fuzzer (libFuzzer), 60 s from the seed corpus, built in the
# sanitizer build: its libraries carry the fuzzer's coverage (-fsanitize=fuzzer-no-link
# above), so one instrumented compile serves both (a build of its own compiled core, server,
# kube and webhook a second time: 330 s of CPU). Longer runs: docs/webhook.md.
build-fuzz: configure-sanitize
	cmake --build $(BUILD_DIR)-asan -j$(JOBS) --target webhook_fuzz

fuzz: build-fuzz
	cd $(BUILD_DIR)-asan && ctest --output-on-failure -L fuzz

# Only the three programs the demo runs (issue #21: building the test suite too took a
# fresh machine's `make demo` from 8 to 18 minutes); `make test` builds the rest.
# commgate-probe only where it is configured (COMMGATE_BUILD_PROBE=ON, the default).
DEMO_TARGETS = commgate commgate-sim
build-demo: configure
	cmake --build $(BUILD_DIR) -j$(JOBS) --target $(DEMO_TARGETS) \
	  $$(cmake --build $(BUILD_DIR) --target help | grep -qw 'commgate-probe' && echo commgate-probe)

demo: build-demo
	./scripts/demo.sh $(BUILD_DIR)

# Both images from images/*.Dockerfile, compiled from source in their build stages (many
# minutes), tagged as the chart's image values; the bases are made from Debian's packages
# where no registry is reachable (docs/install.md "Images"). Needs root and podman (deps).
images: deps
	./scripts/images.sh

# The fast images `make test` runs: the binaries built here in the same base (seconds).
images-from-binaries: deps build-demo
	./scripts/images-from-binaries.sh $(BUILD_DIR)

bench: build
	./scripts/bench.sh $(BUILD_DIR)

format:
	git ls-files '*.cpp' '*.h' | xargs clang-format -i

lint: build
	git ls-files 'core/*.cpp' 'cli/*.cpp' | xargs clang-tidy -p $(BUILD_DIR) --quiet

clean:
	rm -rf $(BUILD_DIR)
