# Conventional entry points. Every target installs what it needs first (idempotent).
BUILD_DIR ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: deps configure build test test-sanitize fuzz demo bench format lint clean

deps:
	./scripts/install-deps.sh

# Unity builds: about half the compile time from scratch (docs/testing.md "CI").
configure: deps
	cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCOMMGATE_UNITY_BUILD=ON \
	  $(CMAKE_FLAGS) >/dev/null

build: configure
	cmake --build $(BUILD_DIR) -j$(JOBS)

# A failed test runs once more: the multi-process tests share 2 cores (docs/testing.md
# "CI": the known flake); a real defect fails both runs.
test: build
	cd $(BUILD_DIR) && ctest --output-on-failure -j$(JOBS) --repeat until-pass:2 $(CTEST_FLAGS)

# The CPU-only parts (no LibTorch) again under AddressSanitizer and UBSan: every test but
# the network-namespace ones and the scale one (a 10,000-pod Job: a minute in make test,
# far longer at -O0 with the sanitizers) (unit, and integration: the servers, the
# Kubernetes client's threads, the simulated cluster, kubectl and the real binaries). Under the sanitizers'
# slowdown a test that failed gets one more run; a real defect fails both.
test-sanitize: deps
	cmake -S . -B $(BUILD_DIR)-asan -DCMAKE_BUILD_TYPE=Debug -DCOMMGATE_SANITIZE=ON \
	  -DCOMMGATE_UNITY_BUILD=ON -DCOMMGATE_BUILD_PROBE=OFF -DCOMMGATE_BUILD_BENCH=OFF >/dev/null
	cmake --build $(BUILD_DIR)-asan -j$(JOBS)
	cd $(BUILD_DIR)-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  ctest --output-on-failure -j$(JOBS) -LE 'netns|scale' --repeat until-pass:2

# The webhook's AdmissionReview fuzzer (clang + libFuzzer + ASan/UBSan), 60 s from the
# seed corpus. Longer runs: docs/webhook.md.
fuzz: deps
	cmake -S . -B $(BUILD_DIR)-fuzz -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=Debug \
	  -DCOMMGATE_SANITIZE=ON -DCMAKE_CXX_FLAGS=-fsanitize=fuzzer-no-link -DCOMMGATE_UNITY_BUILD=ON \
	  -DCOMMGATE_BUILD_PROBE=OFF -DCOMMGATE_BUILD_BENCH=OFF >/dev/null
	cmake --build $(BUILD_DIR)-fuzz -j$(JOBS) --target webhook_fuzz
	cd $(BUILD_DIR)-fuzz && ctest --output-on-failure -L fuzz

demo: build
	./scripts/demo.sh $(BUILD_DIR)

bench: build
	./scripts/bench.sh $(BUILD_DIR)

format:
	git ls-files '*.cpp' '*.h' | xargs clang-format -i

lint: build
	git ls-files 'core/*.cpp' 'cli/*.cpp' | xargs clang-tidy -p $(BUILD_DIR) --quiet

clean:
	rm -rf $(BUILD_DIR)
