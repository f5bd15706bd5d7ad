// The operator under the faults of issue #10, each ending with "the final states are right
// and nothing is lost": the real `commgate operator` against the in-process simulated API
// server (sim::ApiServer) and its cluster (sim::SimCluster: scheduler, Job controller, a
// kubelet running pods as processes on loopback nodes). No root, no network namespaces.
//
// The probe pods run a small script instead of `commgate-probe` (so this test needs no
// LibTorch and its probes take milliseconds): rank 0 writes a REAL recorded probe result
// (what `commgate-probe --local-ranks 2 --params 1M --batch-size 8 --optimizer sgd ...`
// wrote to its termination log, the one probe_outcome_test.cpp reads) to its termination
// log, so every decision still comes from that measurement through the operator's reader,
// the CommProfile and core's decision. The probe and the training wait on gate files the
// test creates, so "mid-probe" and "mid-training" are states the test holds, not timings.
// Each run of a probe pod appends a line to a log: a duplicate probe shows there.
//
// Faults: the API server restarting without history (410 -> relist), dropped watches, 500
// and 429 (Retry-After) bursts, the operator SIGKILLed mid-probe and restarted, a node
// stopping mid-probe (retries, then Failed/ProbeFailed) and mid-training (the Job's
// backoffLimit decides: replaced pod or Failed, the TrainingJob follows).
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "core/yaml_json.h"
#include "sim/api_server.h"
#include "sim/cluster.h"
#include "tests/server/test_client.h"
#include "tests/server/test_pki.h"
#include "tests/support/child_process.h"
#include "tests/support/wait.h"

namespace commgate::op {
namespace COMMGATE_TEST_UNIT {

namespace fs = std::filesystem;
using commgate::testing::ChildProcess;
using commgate::testing::wait_until;
using nlohmann::json;
using std::chrono::seconds;
using Clock = std::chrono::steady_clock;

constexpr const char* kNamespace = "commgate-system";
constexpr const char* kJobs = "nlp";

// A real termination message of `commgate-probe --local-ranks 2 --params 1M --batch-size 8
// --optimizer sgd --max-bytes 1Mi --iters 3 --warmup 1 --compute-iters 3 --ddp-iters 2`
// (build of 2026-12-02; the same as probe_outcome_test.cpp's kRealResult).
const std::string kRealResult =
    R"json({"allReduce":{"dtype":"fp32","fit":{"busbwGBps":1.304,"latencyUs":482.8,"maxRelativeResidual":0.7607,"poor":false},"iterations":3,"results":[{"algbwGBps":0.8121,"busbwGBps":0.8121,"bytes":1048576.0,"dataCheck":"ok","timeUs":1291.0}],"warmupIterations":1},"apiVersion":"commgate.io/v1alpha1","backend":"gloo","compute":{"backwardMs":18.81,"batchSize":8,"forwardMs":5.393,"gradientDtype":"fp32","iterations":3,"model":"synthetic-mlp","optimizer":"sgd","optimizerMs":0.4707,"p10Ms":19.53,"p90Ms":44.03,"parameters":999933.0,"precision":"fp32","stepTimeMs":40.06},"ddpStep":{"bucketCapBytes":26214400.0,"buckets":2,"commShare":0.6598,"computeOnlyStepTimeMs":9.053,"exposedCommMs":17.56,"firstBucketBytes":1048576.0,"stepTimeMs":26.61},"device":"cpu","durationSeconds":1.579,"gpuProduct":"","interface":"lo","kind":"ProbeResult","startTime":"2026-12-02T01:21:50Z","transport":"loopback","world":{"nodes":2,"procsPerNode":1}})json";

// The probe container: $1 is the test's directory, then the operator's probe flags (not
// read: the result is the recorded one). Logs its run, waits for the gate, and rank 0
// writes the result where the kubelet reads the termination message, its startTime
// stamped now (the measurement's numbers as recorded; a result from the recording's date
// would be older than the policy's measurementTTL).
constexpr const char* kProbeScript = R"(#!/bin/sh
dir=$1
now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
if [ "$RANK" = 0 ]; then
  sed "s/\"startTime\":\"[^\"]*\"/\"startTime\":\"$now\"/" "$dir/result.json" > "$TERMINATION_LOG_PATH"
fi
echo "$PWD rank=$RANK" >> "$dir/probe-runs"
while [ ! -e "$dir/probe-gate" ]; do sleep 0.05; done
)";

// The training container: logs its run and waits for the gate.
constexpr const char* kTrainScript = R"(#!/bin/sh
dir=$1
echo "$PWD" >> "$dir/train-runs"
while [ ! -e "$dir/train-gate" ]; do sleep 0.05; done
)";

// Seconds since `start`, for the timings each test prints.
double since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

class OperatorFaults : public ::testing::Test {
 protected:
  void SetUp() override {
    started_ = Clock::now();
    api_.start();
    pki_.issue_server_cert(1);
    dir_ = fs::path(pki_.ca_file()).parent_path();
    std::ofstream(dir_ / "kubeconfig") << api_.kubeconfig();
    std::ofstream(dir_ / "probe.sh") << kProbeScript;
    std::ofstream(dir_ / "train.sh") << kTrainScript;
    std::ofstream(dir_ / "result.json") << kRealResult;
    const auto crds =
        *api_.store().find_resource("apiextensions.k8s.io", "v1", "customresourcedefinitions");
    for (const char* file : {"commpolicies.commgate.io.yaml", "commprofiles.commgate.io.yaml",
                             "trainingjobs.commgate.io.yaml"}) {
      std::ifstream in(std::string(COMMGATE_SOURCE_DIR) + "/crds/" + file);
      std::stringstream text;
      text << in.rdbuf();
      for (const auto& doc : yaml_documents_to_json(text.str())) api_.store().create(crds, "", doc);
    }
    const auto namespaces = *api_.store().find_resource("", "v1", "namespaces");
    for (const char* ns : {kNamespace, kJobs})
      api_.store().create(namespaces, "", {{"metadata", {{"name", ns}}}});
    // Named `default`, it replaces the built-in policy (otherwise the strictest applies):
    // admits what the recorded probe measured (a 66% share at 2 nodes); a gloo probe
    // (the nodes have no GPUs); retries after 1 s, then 2 s, then the job fails.
    const json policy = {
        {"apiVersion", "commgate.io/v1alpha1"},
        {"kind", "CommPolicy"},
        {"metadata", {{"name", "default"}}},
        {"spec",
         {{"maxCommShare", 0.95},
          {"enforcementAction", "downsize"},
          {"onMissingMeasurement", "gate"},
          {"measurementTTL", "1h"},
          {"probe", {{"timeoutSeconds", 60}, {"backend", "gloo"}, {"maxNodes", 2}}},
          {"retryStrategy",
           {{"backoffLimitCount", 2}, {"backoffBaseSeconds", 1}, {"backoffMaxSeconds", 2}}}}}};
    api_.store().create(*api_.store().find_resource("commgate.io", "v1alpha1", "commpolicies"), "",
                        policy);
    cluster_ = std::make_unique<sim::SimCluster>(api_.store());
    cluster_->start();
  }
  void TearDown() override {
    op_.reset();
    if (cluster_) cluster_->stop();
    std::printf("[ timing ] %s: %.1f s\n",
                ::testing::UnitTest::GetInstance()->current_test_info()->name(), since(started_));
  }

  // Nodes `<pool>-1` .. `<pool>-n`, labelled pool=<pool>.
  void add_pool(const std::string& pool, int n) {
    for (int i = 1; i <= n; ++i) {
      sim::NodeSpec spec = sim::node_spec(pool + "-" + std::to_string(i));
      spec.labels["pool"] = pool;
      cluster_->add_node(spec);
    }
  }

  // Starts `commgate operator` (no election: it reconciles at once) and waits until it
  // leads and its caches are synced.
  void start_operator() {
    setenv("POD_NAME", "operator", 1);
    const std::string log = "operator-" + std::to_string(++operator_starts_) + ".log";
    op_ = std::make_unique<ChildProcess>(
        std::vector<std::string>{
            COMMGATE_BINARY, "operator", "--port", "0", "--address", "127.0.0.1", "--tls-cert-file",
            pki_.cert_file(), "--tls-private-key-file", pki_.key_file(), "--kubeconfig",
            (dir_ / "kubeconfig").string(), "--namespace", kNamespace, "--leader-elect=false",
            "--probe-command", "/bin/sh," + (dir_ / "probe.sh").string() + "," + dir_.string()},
        dir_ / log);
    port_ = op_->wait_for_port(std::regex("serving /healthz /readyz /metrics on [^ ]*:([0-9]+)"));
    ASSERT_NE(port_, 0) << op_->output();
    ASSERT_TRUE(wait_until(
        [&] { return metrics().find("\ncommgate_operator_leader 1\n") != std::string::npos; },
        seconds(20)))
        << op_->output();
  }

  std::string metrics() {
    server::testing::Client c(port_, pki_.ca_file());
    if (!c.connect().empty()) return "";
    try {
      return c.request("GET", "/metrics").body;
    } catch (const std::exception&) {
      return "";
    }
  }
  // The sum of every sample of `family` (all label sets).
  double metric_sum(const std::string& family) {
    std::istringstream lines(metrics());
    double sum = 0;
    for (std::string line; std::getline(lines, line);) {
      if (line.rfind(family, 0) != 0) continue;
      const char next = line[family.size()];
      if (next != ' ' && next != '{') continue;
      sum += std::stod(line.substr(line.rfind(' ') + 1));
    }
    return sum;
  }

  // A gated 2-node TrainingJob of the recorded probe's model on pool `pool`; its training
  // waits for the train gate; `backoff_limit` is its Job's.
  json training_job(const std::string& name, const std::string& pool, int backoff_limit = 0) {
    const json container = {{"name", "trainer"},
                            {"image", "ignored-by-the-sim"},
                            {"command", {"/bin/sh", (dir_ / "train.sh").string(), dir_.string()}}};
    return {
        {"apiVersion", "commgate.io/v1alpha1"},
        {"kind", "TrainingJob"},
        {"metadata", {{"name", name}, {"namespace", kJobs}}},
        {"spec",
         {{"numNodes", 2},
          {"numProcPerNode", 1},
          {"suspend", true},
          {"nodeSelector", {{"pool", pool}}},
          {"model",
           {{"parameters", "1M"},
            {"gradientDtype", "fp32"},
            {"batchSize", 8},
            {"optimizer", "sgd"}}},
          {"runPolicy", {{"backoffLimit", backoff_limit}}},
          {"template",
           {{"spec",
             {{"terminationGracePeriodSeconds", 0}, {"containers", json::array({container})}}}}}}}};
  }
  sim::ResourceInfo resource(const char* group, const char* version, const char* plural) {
    return *api_.store().find_resource(group, version, plural);
  }
  void create_job(const json& tj) {
    api_.store().create(resource("commgate.io", "v1alpha1", "trainingjobs"), kJobs, tj);
  }
  json get_job(const std::string& name) {
    try {
      return api_.store().get(resource("commgate.io", "v1alpha1", "trainingjobs"), kJobs, name);
    } catch (const std::exception&) {
      return nullptr;
    }
  }
  std::string phase(const std::string& name) {
    const json tj = get_job(name);
    return tj.is_object() ? tj.value("/status/phase"_json_pointer, std::string()) : "";
  }
  // Waits until every job in `names` has phase `want`; on failure, says where each is.
  ::testing::AssertionResult all_reach(const std::vector<std::string>& names,
                                       const std::string& want, seconds timeout) {
    const bool ok = wait_until(
        [&] {
          for (const auto& n : names)
            if (phase(n) != want) return false;
          return true;
        },
        timeout);
    if (ok) return ::testing::AssertionSuccess();
    auto failure = ::testing::AssertionFailure() << "not all " << want << ":";
    for (const auto& n : names) failure << "\n  " << n << ": " << get_job(n).dump();
    return failure << "\n" << (op_ ? op_->output() : "");
  }
  // The lines of a run log ("probe-runs", "train-runs").
  std::vector<std::string> runs(const char* log) {
    std::ifstream in(dir_ / log);
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
  }
  std::string run_log() {
    std::string out;
    for (const auto& line : runs("probe-runs")) out += line + "\n";
    return out;
  }
  // What a duplicate probe needs explaining with: the probe runs, every write to Jobs in
  // the probes' namespace from the sim's audit log (who created or deleted which, when,
  // with what answer), the Events and the operator's log.
  std::string probe_history() {
    std::string out = "probe runs:\n" + run_log() + "writes to probe Jobs (audit log):\n";
    for (const sim::AuditEvent& e : api_.audit_events()) {
      const json j = sim::to_json(e);
      if (e.object_ref.resource != "jobs" || e.object_ref.ns != kNamespace) continue;
      if (e.verb != "create" && e.verb != "delete" && e.verb != "update" && e.verb != "patch")
        continue;
      out += "  " + j["stageTimestamp"].get<std::string>() + " " + e.verb + " " +
             e.object_ref.name + " " + std::to_string(e.code) + "\n";
    }
    return out + "events:\n" + event_log() + "operator:\n" + (op_ ? op_->output() : "");
  }
  void open_gate(const char* gate) { std::ofstream(dir_ / gate) << "open\n"; }
  std::vector<json> probe_jobs() {
    return api_.store().list(resource("batch", "v1", "jobs"), kNamespace, sim::ListOptions{}).items;
  }
  // The ProbeCreated Events (the aggregated count of each), for the job `name`.
  int probe_created_events(const std::string& name) {
    int count = 0;
    for (const json& e :
         api_.store().list(resource("events.k8s.io", "v1", "events"), kJobs, {}).items) {
      if (e.value("reason", "") != "ProbeCreated" ||
          e.value("/regarding/name"_json_pointer, std::string()) != name)
        continue;
      count += e.contains("series") ? e["series"].value("count", 1) : 1;
    }
    return count;
  }
  // Every Event in the jobs' namespace, one line each, in the order stored.
  std::string event_log() {
    std::string out;
    for (const json& e :
         api_.store().list(resource("events.k8s.io", "v1", "events"), kJobs, {}).items)
      out += e.value("/regarding/name"_json_pointer, std::string()) + " " + e.value("reason", "") +
             ": " + e.value("note", "") + "\n";
    return out;
  }
  // A decided job's status.decision.action, "" when none.
  std::string action(const std::string& name) {
    const json tj = get_job(name);
    return tj.is_object() ? tj.value("/status/decision/action"_json_pointer, std::string()) : "";
  }

  Clock::time_point started_;
  sim::ApiServer api_;
  server::testing::TestPki pki_;
  fs::path dir_;
  std::unique_ptr<sim::SimCluster> cluster_;
  std::unique_ptr<ChildProcess> op_;
  uint16_t port_ = 0;
  int operator_starts_ = 0;
};

// Jobs created and changed while the API server restarts without its history: the
// operator's watch from its old version gets 410 Expired and relists, and finds them.
TEST_F(OperatorFaults, ApiServerRestartWithoutHistoryRelistsAndDecidesEveryJob) {
  add_pool("p", 2);
  start_operator();
  create_job(training_job("before", "p"));
  ASSERT_TRUE(wait_until([&] { return runs("probe-runs").size() == 2; }, seconds(15)))
      << op_->output();
  const double relists_before = metric_sum("commgate_operator_watch_relists_total");

  const auto restart = Clock::now();
  api_.restart(/*keep_history=*/false);
  // Changes the operator's watches have not seen: a new job, and a new label on the first.
  create_job(training_job("after", "p"));
  json before = get_job("before");
  before["metadata"]["labels"]["team"] = "nlp";
  api_.store().update(resource("commgate.io", "v1alpha1", "trainingjobs"), kJobs, "before", before,
                      sim::WritePart::kMain);
  ASSERT_TRUE(wait_until(
      [&] { return metric_sum("commgate_operator_watch_relists_total") > relists_before; },
      seconds(15)))
      << metrics();
  std::printf("[ timing ] relisted %.1f s after the restart\n", since(restart));
  open_gate("probe-gate");
  open_gate("train-gate");
  EXPECT_TRUE(all_reach({"before", "after"}, "Succeeded", seconds(20)));
  EXPECT_EQ(action("before"), "Admit");
  EXPECT_EQ(action("after"), "Admit");
  EXPECT_EQ(get_job("before")["metadata"]["labels"]["team"], "nlp");
  EXPECT_EQ(runs("probe-runs").size(), 2u) << "one probe of 2 pods\n" << probe_history();
}

// Watches dropped again and again while jobs arrive and the probe runs: no job is missed.
// The drop is the API server restarting WITH its history (every connection ends; each
// watch resumes from its last resourceVersion, no 410), and close_all_watches between.
// The operator's six watches (TrainingJobs, Jobs, Pods, CommPolicies, CommProfiles,
// Namespaces) are each established again: the sim's audit log counts the watch requests.
// (It was disabled while a pool was sometimes probed twice: a completed probe whose pods
// the cache had not seen read as "rank 0's pod is gone"; fixed 2026-12-02.)
TEST_F(OperatorFaults, DroppedWatchesMissNoJob) {
  add_pool("p", 2);
  start_operator();
  auto watches = [&] {
    size_t n = 0;
    for (const sim::AuditEvent& e : api_.audit_events()) n += e.verb == "watch";
    return n;
  };
  const size_t watches_before = watches();
  std::vector<std::string> names;
  for (int i = 0; i < 6; ++i) {
    api_.close_all_watches();
    if (i % 2 == 0) api_.restart(/*keep_history=*/true);
    names.push_back("job-" + std::to_string(i));
    create_job(training_job(names.back(), "p"));
    if (i == 3) open_gate("probe-gate");
  }
  open_gate("train-gate");
  api_.restart(/*keep_history=*/true);
  EXPECT_TRUE(all_reach(names, "Succeeded", seconds(25)));
  for (const auto& n : names) EXPECT_EQ(action(n), "Admit") << n;
  EXPECT_GE(watches(), watches_before + 6) << "every watch established again\n" << metrics();
  EXPECT_EQ(runs("probe-runs").size(), 2u) << "one probe of 2 pods\n" << probe_history();
}

// sim::ApiServer::close_all_watches ends the operator's watches although the operator is
// another process: the sim counts (open_watches) and ends every watch stream it serves,
// whoever holds it. Each of the operator's watches is requested again at once, from its
// last resourceVersion (a restart, not a relist), and a job created after the drop is
// decided and runs. (Stop 9 noted that open_watches() read 0 while the operator watched
// and that close_all_watches did not reach it; this test shows both do.)
TEST_F(OperatorFaults, CloseAllWatchesEndsTheOperatorsWatchesWhichWatchAgain) {
  add_pool("p", 2);
  start_operator();
  // TrainingJobs, Jobs, Pods, CommPolicies, CommProfiles, Namespaces.
  constexpr size_t kOperatorWatches = 6;
  ASSERT_TRUE(wait_until([&] { return api_.open_watches() >= kOperatorWatches; }, seconds(10)))
      << "open watches: " << api_.open_watches() << "\n"
      << op_->output();
  auto watch_requests = [&] {
    size_t n = 0;
    for (const sim::AuditEvent& e : api_.audit_events()) n += e.verb == "watch";
    return n;
  };
  const size_t requests_before = watch_requests();
  const double restarts_before = metric_sum("commgate_operator_watch_restarts_total");
  const double relists_before = metric_sum("commgate_operator_watch_relists_total");

  api_.close_all_watches();
  EXPECT_TRUE(wait_until([&] { return watch_requests() >= requests_before + kOperatorWatches; },
                         seconds(10)))
      << "watch requests " << requests_before << " -> " << watch_requests() << "\n"
      << op_->output();
  EXPECT_TRUE(wait_until([&] { return api_.open_watches() >= kOperatorWatches; }, seconds(10)))
      << "open watches: " << api_.open_watches();
  EXPECT_TRUE(wait_until(
      [&] {
        return metric_sum("commgate_operator_watch_restarts_total") >=
               restarts_before + kOperatorWatches;
      },
      seconds(10)))
      << metrics();
  EXPECT_EQ(metric_sum("commgate_operator_watch_relists_total"), relists_before) << metrics();

  create_job(training_job("after-drop", "p"));
  open_gate("probe-gate");
  open_gate("train-gate");
  EXPECT_TRUE(all_reach({"after-drop"}, "Succeeded", seconds(20)));
  EXPECT_EQ(runs("probe-runs").size(), 2u) << "one probe of 2 pods\n" << probe_history();
}

// Bursts of 500 and 429 (Retry-After) on what the operator writes and reads: the probe
// Job's create, the CommProfile, the TrainingJob's patch and status. The decision lands,
// one probe, and the failures show in the reconciler's error metric.
TEST_F(OperatorFaults, ServerErrorAndThrottlingBurstsStillDecideWithOneProbe) {
  add_pool("p", 2);
  start_operator();
  struct Burst {
    int status;
    const char* path;
  };
  const std::vector<Burst> bursts = {{500, "/apis/batch/v1/namespaces/commgate-system/jobs"},
                                     {429, "/commprofiles"},
                                     {500, "/trainingjobs"},
                                     {429, "/trainingjobs"}};
  api_.fail_next_requests(3, 500, seconds(1), "/commprofiles");
  create_job(training_job("bursty", "p"));
  uint64_t failed = 0;
  for (const Burst& b : bursts) {
    ASSERT_TRUE(wait_until([&] { return api_.injected_failures() >= failed + 3; }, seconds(15)))
        << "burst before " << b.status << " " << b.path << " not consumed\n"
        << op_->output();
    failed = api_.injected_failures();
    api_.fail_next_requests(3, b.status, seconds(1), b.path);
    if (failed >= 6) open_gate("probe-gate");
  }
  open_gate("probe-gate");
  open_gate("train-gate");
  EXPECT_TRUE(all_reach({"bursty"}, "Succeeded", seconds(25)));
  EXPECT_EQ(action("bursty"), "Admit");
  EXPECT_EQ(runs("probe-runs").size(), 2u) << "one probe of 2 pods\n" << probe_history();
  EXPECT_EQ(probe_created_events("bursty"), 1);
  EXPECT_GE(api_.injected_failures(), 12u);
  EXPECT_GT(metric_sum("commgate_operator_reconcile_errors_total"), 0) << metrics();
}

// The operator SIGKILLed while its probe runs, then started again: it finds the probe
// its predecessor created (deterministic name, create-if-absent) and decides from it.
TEST_F(OperatorFaults, OperatorKilledMidProbeRestartsWithoutADuplicateProbe) {
  add_pool("p", 2);
  start_operator();
  create_job(training_job("survivor", "p"));
  ASSERT_TRUE(wait_until([&] { return runs("probe-runs").size() == 2; }, seconds(15)))
      << op_->output();
  ASSERT_EQ(probe_jobs().size(), 1u);
  const std::string probe_uid = probe_jobs()[0]["metadata"]["uid"];
  ASSERT_EQ(kill(op_->pid(), SIGKILL), 0);
  EXPECT_EQ(op_->wait_exit(seconds(5)), 128 + SIGKILL);

  const auto restarted = Clock::now();
  start_operator();
  // The new process has reconciled the job while the probe still runs.
  ASSERT_TRUE(
      wait_until([&] { return metric_sum("commgate_operator_controller_reconciles_total") >= 1; },
                 seconds(10)));
  ASSERT_EQ(probe_jobs().size(), 1u);
  EXPECT_EQ(probe_jobs()[0]["metadata"]["uid"], probe_uid);
  open_gate("probe-gate");
  open_gate("train-gate");
  EXPECT_TRUE(all_reach({"survivor"}, "Succeeded", seconds(20)));
  std::printf("[ timing ] decided and trained %.1f s after the restart\n", since(restarted));
  EXPECT_EQ(action("survivor"), "Admit");
  EXPECT_EQ(runs("probe-runs").size(), 2u) << "one probe of 2 pods\n" << probe_history();
  EXPECT_EQ(probe_created_events("survivor"), 1) << event_log();
}

// A node of a 2-node pool stops while the probe runs: the probe fails (an attempt counted
// in the pool's CommProfile), and the job waits for a second usable node (reason
// PoolTooSmall: one node can measure no link, issue #20) rather than probing again on the
// one node left and failing; a node that joins the pool lets it probe, and the job trains.
// (Before the pool check, the job was Failed with ProbeFailed after its retries.)
TEST_F(OperatorFaults, NodeStoppingMidProbeWaitsForTheNodesThenProbesAgain) {
  add_pool("p", 2);
  start_operator();
  create_job(training_job("unlucky", "p"));
  ASSERT_TRUE(wait_until([&] { return runs("probe-runs").size() == 2; }, seconds(15)))
      << op_->output();
  const auto stopped = Clock::now();
  cluster_->stop_node("p-2");
  auto admitted_reason = [&] {
    for (const json& c : get_job("unlucky")["status"].value("conditions", json::array()))
      if (c["type"] == "Admitted") return c.value("reason", std::string());
    return std::string();
  };
  ASSERT_TRUE(wait_until([&] { return admitted_reason() == "PoolTooSmall"; }, seconds(30)))
      << get_job("unlucky").dump(2) << op_->output();
  std::printf("[ timing ] waiting for nodes %.1f s after the node stopped\n", since(stopped));
  const json tj = get_job("unlucky");
  EXPECT_EQ(tj["status"].value("phase", ""), "Gated") << tj.dump(2);
  EXPECT_TRUE(tj["spec"].value("suspend", false)) << "never launched";
  EXPECT_EQ(runs("train-runs").size(), 0u);
  const std::size_t probe_pods_before = runs("probe-runs").size();

  sim::NodeSpec spare = sim::node_spec("p-3");
  spare.labels["pool"] = "p";
  cluster_->add_node(spare);
  open_gate("probe-gate");
  open_gate("train-gate");
  EXPECT_TRUE(all_reach({"unlucky"}, "Succeeded", seconds(40))) << op_->output();
  EXPECT_EQ(runs("probe-runs").size(), probe_pods_before + 2) << probe_history();
}

// A node stops under a running training (pod 0's): with backoffLimit 0 the Job fails and
// the TrainingJob follows to Failed; with backoffLimit 1 and a spare node in the pool the
// pod is replaced there and the training completes.
TEST_F(OperatorFaults, NodeStoppingMidTrainingReplacesThePodOrFailsPerBackoffLimit) {
  add_pool("strict", 3);
  add_pool("lenient", 3);
  start_operator();
  open_gate("probe-gate");
  create_job(training_job("strict", "strict", /*backoff_limit=*/0));
  create_job(training_job("lenient", "lenient", /*backoff_limit=*/1));
  ASSERT_TRUE(all_reach({"strict", "lenient"}, "Running", seconds(20)));
  ASSERT_TRUE(wait_until([&] { return runs("train-runs").size() == 4; }, seconds(10)));
  const auto pods = resource("", "v1", "pods");
  auto node_of_pod0 = [&](const std::string& job) {
    for (const json& p : api_.store().list(pods, kJobs, {}).items)
      if (p.value("/metadata/labels/batch.kubernetes.io~1job-name"_json_pointer, "") == job &&
          p.value("/metadata/annotations/batch.kubernetes.io~1job-completion-index"_json_pointer,
                  "") == "0")
        return p.value("/spec/nodeName"_json_pointer, std::string());
    return std::string();
  };
  const auto stopped = Clock::now();
  for (const char* job : {"strict", "lenient"}) {
    const std::string node = node_of_pod0(job);
    ASSERT_FALSE(node.empty()) << job;
    cluster_->stop_node(node);
  }
  EXPECT_TRUE(all_reach({"strict"}, "Failed", seconds(15)));
  // The replacement runs (a fifth training process) before the gate opens.
  EXPECT_TRUE(wait_until([&] { return runs("train-runs").size() == 5; }, seconds(15)));
  open_gate("train-gate");
  EXPECT_TRUE(all_reach({"lenient"}, "Succeeded", seconds(15)));
  std::printf("[ timing ] both final %.1f s after the nodes stopped\n", since(stopped));
  EXPECT_EQ(runs("probe-runs").size(), 4u) << "one probe of 2 pods per pool\n" << probe_history();
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::op
