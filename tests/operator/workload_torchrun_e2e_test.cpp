// The training workload's environment starts a REAL PyTorch DDP training (issue #10): the
// Service and Job that build_workload makes for a 2-node x 1-process TrainingJob run on
// the simulated cluster (scheduler, kubelet running pods as processes, Job controller; two
// nodes on loopback), each pod `python3 -m torch.distributed.run
// examples/training/ddp_tiny.py` with no flags, so torchrun takes its topology from the
// PET_* variables and the script checks RANK/WORLD_SIZE against NNODES, NODE_RANK,
// NPROC_PER_NODE, WORLD_SIZE. The Job must reach Complete with the two pods as ranks 0
// and 1, and workload_state must read Succeeded. Then the same Job with a wrong
// MASTER_ADDR, or with NNODES=3 for two pods, must not complete: it fails (backoff limit
// or activeDeadlineSeconds), so this test can fail when the injected environment is wrong.
//
// Needs Debian's python3-torch for /usr/bin/python3 (scripts/install-deps.sh); skipped
// with a message otherwise. Each case takes 10-30 s on a loaded 2-core machine, most of it
// two torch imports per pod (docs/operator.md "The training workload").
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <set>
#include <sstream>
#include <string>

#include "core/yaml_json.h"
#include "operator/workload_job.h"
#include "operator/workload_state.h"
#include "sim/cluster.h"
#include "tests/support/builders.h"
#include "tests/support/child_process.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/wait.h"

namespace commgate::op {

// gtest prints the phase by name (found by ADL in the enum's namespace).
void PrintTo(WorkloadPhase phase, std::ostream* os) {
  *os << to_string(phase);
}

namespace COMMGATE_TEST_UNIT {

using nlohmann::json;
using namespace std::chrono_literals;

constexpr const char* kPython = COMMGATE_PYTHON;
const std::string kScript = std::string(COMMGATE_SOURCE_DIR) + "/examples/training/ddp_tiny.py";

// A TCP port free on loopback now (bound to port 0, then released): the pods of every
// case share 127.0.0.1, and other tests may run at the same time.
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0)
    port = ntohs(addr.sin_port);
  ::close(fd);
  return port;
}

// Whether Debian's torch is there, without importing it (that alone takes seconds).
bool torch_available() {
  const std::string cmd = std::string(kPython) +
                          " -c 'import importlib.util, sys; "
                          "sys.exit(importlib.util.find_spec(\"torch\") is None)' >/dev/null 2>&1";
  return std::system(cmd.c_str()) == 0;
}

// The TrainingJob a researcher would write: 2 nodes x 1 process, the container runs
// torchrun on the tiny DDP script with no flags (they come from PET_*).
json ddp_job(const std::string& name, int deadline_seconds) {
  const json container = {
      {"name", "trainer"},
      {"image", "ignored-by-the-sim"},
      {"command", {kPython, "-m", "torch.distributed.run", kScript}},
      // The sim replaces the literal termination path by the pod's own file.
      {"args", {"--result", "/dev/termination-log"}},
      {"env",
       {{{"name", "OMP_NUM_THREADS"}, {"value", "1"}},
        // Debian bookworm's torch 1.13 under Python 3.11: torchrun's --redirects/--tee
        // default "0" crashes (Std.from_str finds no IntFlag member for 0); 1 tees stdout.
        {{"name", "PET_REDIRECTS"}, {"value", "1"}},
        {{"name", "PET_TEE"}, {"value", "1"}},
        // torchrun keeps its logs in a torchelastic_* directory under $TMPDIR: the test's.
        {{"name", "TMPDIR"}, {"value", commgate::testing::scratch_dir().string()}}}}};
  return testing::a_training_job(name)
      .namespace_("default")
      .nodes(2)
      .procs_per_node(1)
      .set("/spec/runPolicy", {{"backoffLimit", 0}, {"activeDeadlineSeconds", deadline_seconds}})
      .set("/spec/template/spec/containers", json::array({container}))
      .set("/spec/template/spec/terminationGracePeriodSeconds", 0)
      .json();
}

// Sets env `name` to `value` in every container of the built Job (a deliberately wrong
// environment for the negative cases).
void override_env(json& job, const std::string& name, const std::string& value) {
  for (auto& c : job["spec"]["template"]["spec"]["containers"])
    for (auto& e : c["env"])
      if (e["name"] == name) e = {{"name", name}, {"value", value}};
}

class WorkloadTorchrun : public ::testing::Test {
 protected:
  sim::ObjectStore store;
  sim::ResourceInfo pods = *store.find_resource("", "v1", "pods");
  sim::ResourceInfo jobs = *store.find_resource("batch", "v1", "jobs");
  sim::ResourceInfo services = *store.find_resource("", "v1", "services");
  std::unique_ptr<sim::SimCluster> cluster;

  void SetUp() override {
    if (!torch_available())
      GTEST_SKIP() << kPython << " has no torch: install Debian's "
                   << "python3-torch (scripts/install-deps.sh)";
    // The TrainingJob is stored (it owns the Service and the Job: the sim's garbage
    // collector, like kube's, deletes a dependent whose owner does not exist).
    const auto crd = yaml_documents_to_json(testing::read_file(
        std::string(COMMGATE_SOURCE_DIR) + "/crds/trainingjobs.commgate.io.yaml"));
    store.create(*store.find_resource("apiextensions.k8s.io", "v1", "customresourcedefinitions"),
                 "", crd.at(0));
    cluster = std::make_unique<sim::SimCluster>(store);
    cluster->start();
    cluster->add_node(sim::node_spec("n1"));  // no GPUs: a CPU pool
    cluster->add_node(sim::node_spec("n2"));
  }
  void TearDown() override {
    if (cluster) cluster->stop();
  }

  // Stores the TrainingJob, builds its workload as the operator would for a CPU pool probed
  // on loopback, lets `tamper` change the Job, and creates the Service and the Job.
  WorkloadObjects launch(const json& manifest, const std::function<void(json&)>& tamper = {}) {
    const auto trainingjobs = store.find_resource("commgate.io", "v1alpha1", "trainingjobs");
    if (!trainingjobs) throw std::runtime_error("the TrainingJob CRD is not served");
    const TrainingJob job = parse_training_job(store.create(*trainingjobs, "default", manifest));
    CommProfileStatus profile;  // what the probe reports on the sim's loopback pods
    profile.backend = "gloo";
    profile.transport = "loopback";
    profile.interface_name = "lo";
    profile.device = "cpu";
    WorkloadSettings settings;
    settings.master_port = free_port();
    WorkloadObjects o = build_workload(job, job.metadata.uid, nccl_env_of(profile), settings,
                                       pool_device_of(profile));
    if (tamper) tamper(o.job);
    store.create(services, "default", o.service);
    store.create(jobs, "default", o.job);
    return o;
  }

  json job(const std::string& name) { return store.get(jobs, "default", name); }

  std::vector<json> pods_of(const std::string& name) {
    sim::ListOptions o;
    o.labels = sim::LabelSelectorQuery::parse("commgate.io/trainingjob=" + name);
    return store.list(pods, "default", o).items;
  }

  // Waits for the Job to finish (Complete or Failed); its state as workload_state reads it.
  // `phases`: each phase read, once per change, in order.
  WorkloadState wait_finished(const std::string& name, std::chrono::seconds limit,
                              std::vector<std::string>* phases = nullptr) {
    WorkloadState state;
    commgate::testing::wait_until(
        [&] {
          state = workload_state(job(name));
          if (phases && (phases->empty() || phases->back() != to_string(state.phase)))
            phases->push_back(to_string(state.phase));
          return state.phase == WorkloadPhase::kSucceeded || state.phase == WorkloadPhase::kFailed;
        },
        limit);
    return state;
  }

  // Every pod's container log, for a failure's message.
  std::string logs_of(const std::string& name) {
    std::ostringstream out;
    for (const auto& p : pods_of(name)) {
      const std::string dir = cluster->work_dir() + "/default_" +
                              p["metadata"]["name"].get<std::string>() + "_" +
                              p["metadata"]["uid"].get<std::string>();
      std::ifstream log(dir + "/trainer.log");
      out << "--- " << p["metadata"]["name"].get<std::string>() << " ("
          << p.value("status", json::object()).value("phase", "?") << ")\n"
          << log.rdbuf() << "\n";
    }
    return out.str();
  }
};

TEST_F(WorkloadTorchrun, injected_environment_runs_a_real_ddp_training_to_completion) {
  const auto started = std::chrono::steady_clock::now();
  launch(ddp_job("ddp", 300));
  std::vector<std::string> phases;
  const WorkloadState state = wait_finished("ddp", 240s, &phases);
  ASSERT_EQ(state.phase, WorkloadPhase::kSucceeded) << state.reason << ": " << state.message << "\n"
                                                    << job("ddp").dump(2) << "\n"
                                                    << logs_of("ddp");
  EXPECT_EQ(state.reason, "CompletionsReached");
  EXPECT_EQ(state.succeeded, 2);
  // What the TrainingJob's status mirrors, read from the sim's real Job statuses: Pending
  // while the pods start (the sim's Job controller may already count them Ready when first
  // read), Running through the training, then Succeeded; never Failed.
  ASSERT_GE(phases.size(), 2u);
  if (phases.front() == "Pending") phases.erase(phases.begin());
  EXPECT_EQ(phases, (std::vector<std::string>{"Running", "Succeeded"}));

  // Each pod ran as the rank of its completion index, on its own node.
  std::set<std::string> nodes;
  std::set<int> ranks;
  for (const auto& p : pods_of("ddp")) {
    const std::string index =
        p["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"];
    const json terminated = p["status"]["containerStatuses"][0]["state"]["terminated"];
    EXPECT_EQ(terminated["exitCode"], 0);
    const std::string want =
        "ddp_tiny: rank " + index + " of 2 (node " + index + " of 2, local rank 0) trained 5 steps";
    EXPECT_EQ(terminated.value("message", "").rfind(want, 0), 0u)
        << "pod " << p["metadata"]["name"] << ": " << terminated.value("message", "");
    ranks.insert(std::stoi(index));
    nodes.insert(p["spec"]["nodeName"].get<std::string>());
  }
  EXPECT_EQ(ranks, (std::set<int>{0, 1}));
  EXPECT_EQ(nodes, (std::set<std::string>{"n1", "n2"}));
  std::cout << "[ time     ] 2 pods of torchrun + DDP: "
            << std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() -
                                                                started)
                   .count()
            << " s\n";
}

// The same training must fail when its environment is wrong: these are what the positive
// case would meet if build_workload injected a wrong value. Each case also waits for
// evidence that torchrun itself reached the rendezvous and hung or failed there, so a
// Job killed by its deadline while torch was still importing (a slow machine) does not
// pass for the wrong reason.
enum class Evidence {
  kLogLine,          // a pod's log contains `log_line`
  kMasterListening,  // rank 0's store accepts connections on MASTER_PORT: it waits for ranks
};

struct WrongEnv {
  std::string name;
  std::map<std::string, std::string> env;
  Evidence evidence;
  std::string log_line;
};

void PrintTo(const WrongEnv& c, std::ostream* os) {
  *os << c.name;
}

bool accepts_connections(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  ::close(fd);
  return ok;
}

class WorkloadTorchrunWrongEnv : public WorkloadTorchrun,
                                 public ::testing::WithParamInterface<WrongEnv> {};

TEST_P(WorkloadTorchrunWrongEnv, does_not_complete) {
  const auto& tc = GetParam();
  const WorkloadObjects o = launch(ddp_job("bad", 30), [&](json& j) {
    for (const auto& [k, v] : tc.env) override_env(j, k, v);
  });
  const int port = o.service["spec"]["ports"][0]["port"];
  bool seen = false;
  auto next_look = std::chrono::steady_clock::now();
  WorkloadState state;
  commgate::testing::wait_until(
      [&] {
        state = workload_state(job("bad"));
        if (!seen && std::chrono::steady_clock::now() >= next_look) {
          next_look += 200ms;  // logs and a connect are dearer than a store read
          seen = tc.evidence == Evidence::kMasterListening
                     ? accepts_connections(port)
                     : logs_of("bad").find(tc.log_line) != std::string::npos;
        }
        return state.phase == WorkloadPhase::kSucceeded || state.phase == WorkloadPhase::kFailed;
      },
      120s);
  EXPECT_EQ(state.phase, WorkloadPhase::kFailed) << state.reason << ": " << state.message;
  EXPECT_TRUE(state.reason == "BackoffLimitExceeded" || state.reason == "DeadlineExceeded")
      << state.reason;
  EXPECT_EQ(state.succeeded, 0);
  EXPECT_TRUE(seen) << "torchrun never reached the rendezvous before the Job ended ("
                    << state.reason << "): the machine may be too slow for the 30 s deadline";
  std::cout << "[ outcome  ] " << state.reason << ": " << state.message << "\n";
}

INSTANTIATE_TEST_SUITE_P(WorkloadTorchrun, WorkloadTorchrunWrongEnv,
                         ::testing::Values(
                             // Pod 0's hostname without the Service: no such name (the sim resolves
                             // only <hostname>.<subdomain> of an existing Service, as cluster DNS
                             // does); c10d retries the lookup until the deadline.
                             WrongEnv{"master_addr_without_the_service",
                                      {{"MASTER_ADDR", "bad-0"}, {"PET_MASTER_ADDR", "bad-0"}},
                                      Evidence::kLogLine,
                                      "(bad-0, "},
                             // Three nodes announced, two pods: rank 0's store waits for a third
                             // node until the Job's activeDeadlineSeconds.
                             WrongEnv{"three_nodes_for_two_pods",
                                      {{"NNODES", "3"}, {"PET_NNODES", "3"}, {"WORLD_SIZE", "3"}},
                                      Evidence::kMasterListening,
                                      ""}),
                         [](const ::testing::TestParamInfo<WrongEnv>& p) { return p.param.name; });

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::op
