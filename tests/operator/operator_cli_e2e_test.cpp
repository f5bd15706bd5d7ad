// The real `commgate operator` against an in-process simulated API server with the
// project's CRDs: /readyz turns 200 once every watch has listed, /metrics shows the
// leader gauge and the watches, the Lease names this replica; SIGTERM ends it with 0 in
// a few seconds and releases the Lease. Two replicas: the second stays standby, and
// takes over within the lease duration once the first is killed with SIGKILL.
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <thread>

#include "core/yaml_json.h"
#include "sim/api_server.h"
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

constexpr const char* kNamespace = "commgate-system";

class OperatorCli : public ::testing::Test {
 protected:
  void SetUp() override {
    api_.start();
    pki_.issue_server_cert(1);
    dir_ = fs::path(pki_.ca_file()).parent_path();
    std::ofstream(dir_ / "kubeconfig") << api_.kubeconfig();
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
    api_.store().create(namespaces, "", {{"metadata", {{"name", kNamespace}}}});
  }

  // `commgate operator` with leader election on, its output in NAME.log.
  ChildProcess start_operator(const std::string& name, std::vector<std::string> extra = {}) {
    setenv("POD_NAME", name.c_str(), 1);
    std::vector<std::string> args = {COMMGATE_BINARY,
                                     "operator",
                                     "--port",
                                     "0",
                                     "--address",
                                     "127.0.0.1",
                                     "--tls-cert-file",
                                     pki_.cert_file(),
                                     "--tls-private-key-file",
                                     pki_.key_file(),
                                     "--kubeconfig",
                                     (dir_ / "kubeconfig").string(),
                                     "--namespace",
                                     kNamespace,
                                     "--leader-elect=true"};
    args.insert(args.end(), extra.begin(), extra.end());
    return ChildProcess(args, dir_ / (name + ".log"));
  }

  static uint16_t port_of(ChildProcess& p) {
    return p.wait_for_port(std::regex("serving /healthz /readyz /metrics on [^ ]*:([0-9]+)"));
  }
  // The Lease holder identity the process logged ("running as NAME_SUFFIX").
  static std::string identity_of(ChildProcess& p) {
    std::smatch m;
    std::string out;
    wait_until([&] {
      out = p.output();
      return std::regex_search(out, m, std::regex("running as ([^ ]+)"));
    });
    return m.size() > 1 ? m[1].str() : "";
  }

  server::testing::Reply get(uint16_t port, const std::string& path) {
    server::testing::Client c(port, pki_.ca_file());
    if (!c.connect().empty()) return {};
    try {
      return c.request("GET", path);
    } catch (const std::exception&) {
      return {};
    }
  }
  // The value of an unlabelled (or exactly labelled) sample, -1 when absent.
  double sample(uint16_t port, const std::string& series) {
    const std::string body = get(port, "/metrics").body;
    const auto at = body.find("\n" + series + " ");
    return at == std::string::npos ? -1 : std::stod(body.substr(at + series.size() + 2));
  }
  bool metrics_show(uint16_t port, const std::string& line) {
    return get(port, "/metrics").body.find(line) != std::string::npos;
  }

  json lease() {
    const auto leases = *api_.store().find_resource("coordination.k8s.io", "v1", "leases");
    try {
      return api_.store().get(leases, kNamespace, "commgate-operator");
    } catch (const std::exception&) {
      return nullptr;
    }
  }
  std::string holder() {
    const json l = lease();
    return l.is_object() ? l.value("/spec/holderIdentity"_json_pointer, std::string()) : "";
  }

  sim::ApiServer api_;
  server::testing::TestPki pki_;
  fs::path dir_;
};

TEST_F(OperatorCli, LeadsServesHealthAndMetricsAndReleasesTheLeaseOnSigterm) {
  ChildProcess p = start_operator("operator-a");
  const uint16_t port = port_of(p);
  ASSERT_NE(port, 0) << p.output();
  EXPECT_EQ(get(port, "/healthz").status, 200);
  ASSERT_TRUE(wait_until([&] { return get(port, "/readyz").status == 200; }, seconds(20)))
      << p.output();
  ASSERT_TRUE(
      wait_until([&] { return metrics_show(port, "\ncommgate_operator_leader 1\n"); }, seconds(10)))
      << p.output();

  const std::string metrics = get(port, "/metrics").body;
  for (const std::string want :
       {"commgate_operator_caches_synced 1\n", "commgate_operator_build_info{version=\"",
        "commgate_operator_watch_state{collection=\"/apis/commgate.io/v1alpha1/trainingjobs\","
        "state=\"watching\"} 1\n",
        "commgate_operator_watch_lists_total{collection=\"/apis/batch/v1/jobs\"} 1\n",
        "commgate_operator_watch_lists_total{collection=\"/api/v1/pods\"} 1\n",
        "commgate_operator_watch_state{collection=\"/apis/commgate.io/v1alpha1/commprofiles\","
        "state=\"watching\"} 1\n",
        "commgate_operator_controller_work_queue_depth ",
        "commgate_operator_http_responses_total"}) {
    EXPECT_NE(metrics.find(want), std::string::npos) << want << "\n" << metrics;
  }
  // Each metric family is declared once: Prometheus rejects a page with a repeated TYPE.
  std::map<std::string, int> types;
  std::istringstream lines(metrics);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("# TYPE ", 0) == 0) ++types[line.substr(7, line.find(' ', 7) - 7)];
  }
  for (const auto& [family, count] : types) EXPECT_EQ(count, 1) << family;
  EXPECT_GT(types.size(), 30u) << metrics;

  const std::string identity = identity_of(p);
  ASSERT_EQ(identity.rfind("operator-a_", 0), 0u) << p.output();
  EXPECT_EQ(holder(), identity);

  // A TrainingJob applied now reaches the reconciler (watch -> queue -> runner), which
  // reads it from the cache.
  const auto namespaces = *api_.store().find_resource("", "v1", "namespaces");
  api_.store().create(namespaces, "", {{"metadata", {{"name", "nlp"}}}});
  std::ifstream in(std::string(COMMGATE_SOURCE_DIR) + "/examples/jobs/bert-large-350m.yaml");
  std::stringstream text;
  text << in.rdbuf();
  json job = yaml_documents_to_json(text.str()).at(0);
  job["spec"]["suspend"] = true;
  api_.store().create(*api_.store().find_resource("commgate.io", "v1alpha1", "trainingjobs"), "nlp",
                      job);
  EXPECT_TRUE(
      wait_until([&] { return sample(port, "commgate_operator_controller_reconciles_total") >= 1; },
                 seconds(10)))
      << p.output();
  EXPECT_GE(sample(port, "commgate_operator_cache_reads_total{source=\"cache\"}"), 1)
      << get(port, "/metrics").body;
  // Its Events name this controller and this replica (POD_NAME).
  const auto events = *api_.store().find_resource("events.k8s.io", "v1", "events");
  EXPECT_TRUE(wait_until([&] {
    for (const json& e : api_.store().list(events, "nlp", sim::ListOptions{}).items)
      if (e.value("reportingController", "") == "commgate.io/operator" &&
          e.value("reportingInstance", "") == "operator-a")
        return true;
    return false;
  })) << p.output();

  const auto stop_started = std::chrono::steady_clock::now();
  EXPECT_EQ(p.terminate(seconds(10)), 0) << p.output();
  EXPECT_LT(std::chrono::steady_clock::now() - stop_started, seconds(5)) << p.output();
  EXPECT_EQ(holder(), "") << lease().dump();
  EXPECT_NE(p.output().find("received SIGTERM"), std::string::npos) << p.output();
}

TEST_F(OperatorCli, AStandbyTakesOverWithinTheLeaseOnceTheLeaderIsKilled) {
  const std::vector<std::string> fast = {"--leader-elect-lease-duration=6s",
                                         "--leader-elect-renew-deadline=4s",
                                         "--leader-elect-retry-period=1s"};
  ChildProcess a = start_operator("operator-a", fast);
  const uint16_t port_a = port_of(a);
  ASSERT_NE(port_a, 0) << a.output();
  ASSERT_TRUE(wait_until([&] { return metrics_show(port_a, "\ncommgate_operator_leader 1\n"); },
                         seconds(20)))
      << a.output();
  const std::string identity_a = identity_of(a);

  auto json_logs = fast;
  json_logs.push_back("--log-format=json");
  ChildProcess b = start_operator("operator-b", json_logs);
  const uint16_t port_b = port_of(b);
  ASSERT_NE(port_b, 0) << b.output();
  // Ready while standby, and it has seen the Lease held by the other.
  ASSERT_TRUE(wait_until([&] { return get(port_b, "/readyz").status == 200; }, seconds(20)))
      << b.output();
  ASSERT_TRUE(wait_until([&] {
    return b.output().find("the Lease is held by " + identity_a) != std::string::npos;
  })) << b.output();
  EXPECT_TRUE(metrics_show(port_b, "\ncommgate_operator_leader 0\n")) << b.output();
  EXPECT_NE(b.output().find("\"msg\":\"caches synced\""), std::string::npos) << b.output();
  EXPECT_EQ(holder(), identity_a);

  ASSERT_EQ(kill(a.pid(), SIGKILL), 0);
  EXPECT_EQ(a.wait_exit(seconds(5)), 128 + SIGKILL);
  const auto killed = std::chrono::steady_clock::now();
  ASSERT_TRUE(wait_until([&] { return metrics_show(port_b, "\ncommgate_operator_leader 1\n"); },
                         seconds(15)))
      << b.output();
  // The standby waits for the lease to run out by its own clock, then at most one retry.
  EXPECT_LT(std::chrono::steady_clock::now() - killed, seconds(6 + 1 + 3)) << b.output();
  EXPECT_EQ(holder(), identity_of(b));
  EXPECT_EQ(b.terminate(seconds(10)), 0) << b.output();
  EXPECT_EQ(holder(), "");
}

// A workload Job (label commgate.io/trainingjob) wakes its TrainingJob when it is created,
// changed and deleted (the deleted one through the labels last seen). The TrainingJob's
// spec does not parse, so its reconcile ends with a terminal error and nothing else
// requeues it: every reconcile counted after it settles is the Job's doing.
TEST_F(OperatorCli, AWorkloadJobWakesItsTrainingJobAlsoWhenDeleted) {
  ChildProcess p = start_operator("operator-a", {"--leader-elect=false"});
  const uint16_t port = port_of(p);
  ASSERT_NE(port, 0) << p.output();
  ASSERT_TRUE(
      wait_until([&] { return metrics_show(port, "\ncommgate_operator_leader 1\n"); }, seconds(20)))
      << p.output();
  const auto namespaces = *api_.store().find_resource("", "v1", "namespaces");
  api_.store().create(namespaces, "", {{"metadata", {{"name", "nlp"}}}});
  std::ifstream in(std::string(COMMGATE_SOURCE_DIR) + "/examples/jobs/bert-large-350m.yaml");
  std::stringstream text;
  text << in.rdbuf();
  json tj = yaml_documents_to_json(text.str()).at(0);
  tj["spec"]["minNodes"] = 8;  // > numNodes: the reconciler's parser refuses it
  api_.store().create(*api_.store().find_resource("commgate.io", "v1alpha1", "trainingjobs"), "nlp",
                      tj);
  const std::string reconciles = "commgate_operator_controller_reconciles_total";
  // Settled: the same count for a second after at least one reconcile.
  auto settled = [&] {
    double last = -1;
    const auto deadline = std::chrono::steady_clock::now() + seconds(15);
    while (std::chrono::steady_clock::now() < deadline) {
      const double now = sample(port, reconciles);
      if (now >= 1 && now == last) return now;
      last = now;
      std::this_thread::sleep_for(std::chrono::seconds(1));
    }
    return -1.0;
  };
  const double before = settled();
  ASSERT_GE(before, 1) << p.output();

  const auto jobs = *api_.store().find_resource("batch", "v1", "jobs");
  const json container = {{"name", "trainer"}, {"image", "x"}, {"command", {"true"}}};
  const json pod_spec = {{"restartPolicy", "Never"}, {"containers", json::array({container})}};
  const json labels = {{"app.kubernetes.io/managed-by", "commgate"},
                       {"commgate.io/role", "workload"},
                       {"commgate.io/trainingjob", "bert-large"}};
  const json workload = {{"apiVersion", "batch/v1"},
                         {"kind", "Job"},
                         {"metadata", {{"name", "bert-large"}, {"labels", labels}}},
                         {"spec", {{"suspend", true}, {"template", {{"spec", pod_spec}}}}}};
  api_.store().create(jobs, "nlp", workload);
  EXPECT_TRUE(wait_until([&] { return sample(port, reconciles) > before; }, seconds(10)))
      << p.output();
  const double after_create = settled();
  api_.store().remove(jobs, "nlp", "bert-large");
  EXPECT_TRUE(wait_until([&] { return sample(port, reconciles) > after_create; }, seconds(10)))
      << p.output();
  EXPECT_EQ(p.terminate(seconds(10)), 0) << p.output();
}

TEST_F(OperatorCli, ALeaderThatSeesAnotherHolderStopsAndExitsWith1) {
  ChildProcess a = start_operator(
      "operator-a", {"--leader-elect-lease-duration=4s", "--leader-elect-renew-deadline=3s",
                     "--leader-elect-retry-period=1s"});
  const uint16_t port = port_of(a);
  ASSERT_NE(port, 0) << a.output();
  ASSERT_TRUE(
      wait_until([&] { return metrics_show(port, "\ncommgate_operator_leader 1\n"); }, seconds(20)))
      << a.output();
  // Another replica took the Lease (as after a partition longer than the lease).
  const auto leases = *api_.store().find_resource("coordination.k8s.io", "v1", "leases");
  json stolen = lease();
  stolen["spec"]["holderIdentity"] = "operator-z_00000000";
  api_.store().update(leases, kNamespace, "commgate-operator", stolen, sim::WritePart::kMain);
  EXPECT_EQ(a.wait_exit(seconds(10)), 1) << a.output();
  EXPECT_NE(a.output().find("leader election lost: stopped reconciling"), std::string::npos)
      << a.output();
  // It did not write the Lease back on its way out.
  EXPECT_EQ(holder(), "operator-z_00000000");
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::op
