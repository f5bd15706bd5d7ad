// The simulated cluster of the operator's end-to-end tests: tests/operator/e2e_cluster.h.
#include "tests/operator/e2e_cluster.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <regex>
#include <thread>

#include "core/base64.h"

namespace commgate::testing {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace std::chrono_literals;

const std::string kE2eSource = COMMGATE_SOURCE_DIR;

double seconds_since(E2eClock::time_point start) {
  return std::chrono::duration<double>(E2eClock::now() - start).count();
}

bool poll_until(const std::function<bool()>& condition, std::chrono::milliseconds timeout,
                std::chrono::milliseconds interval) {
  const auto deadline = E2eClock::now() + timeout;
  while (!condition()) {
    if (E2eClock::now() >= deadline) return false;
    std::this_thread::sleep_for(interval);  // the polling interval, not a wait for state
  }
  return true;
}

int run_shell(const std::string& command) {
  const int rc = std::system(command.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

EmulatedPool::EmulatedPool(std::string prefix, int nodes, const std::string& rate,
                           const fs::path& log)
    : prefix_(std::move(prefix)), log_(log) {
  ok_ = run_shell(command("up " + std::to_string(nodes) + " " + rate)) == 0;
}

EmulatedPool::~EmulatedPool() {
  run_shell(command("down"));
}

std::string EmulatedPool::command(const std::string& args) const {
  return "NETSIM_PREFIX=" + prefix_ + " NETSIM_OWNER_PID=" + std::to_string(getpid()) + " " +
         COMMGATE_NETSIM_SCRIPT + " " + args + " >>" + log_.string() + " 2>&1";
}

E2eCluster::E2eCluster(E2eClusterOptions options) : options_(std::move(options)) {
  dir_ = fs::temp_directory_path() / ("commgate-" + options_.name + "-" + std::to_string(getpid()));
  fs::remove_all(dir_);
  fs::create_directories(dir_ / "kubectl");
  admin_kubeconfig_ = (dir_ / "admin.kubeconfig").string();
}

E2eCluster::~E2eCluster() {
  webhook_.reset();
  sim_.reset();  // kills the pods' processes
  pools_.clear();
  std::error_code ec;
  if (keep_)
    std::cout << "[e2e] kept for a look: " << dir_ << std::endl;
  else
    fs::remove_all(dir_, ec);
}

std::string E2eCluster::missing_prerequisite() {
  if (geteuid() != 0) return "network namespaces and tc need root";
  if (!fs::exists(COMMGATE_KUBECTL)) return std::string("no kubectl at ") + COMMGATE_KUBECTL;
  if (!fs::exists(COMMGATE_PROBE_BIN)) return "commgate-probe is not built";
  return "";
}

void E2eCluster::start() {
  const std::string id = std::to_string(getpid() % 100000);
  for (const E2ePoolSpec& spec : options_.pools) {
    if (spec.rate.empty()) continue;
    pools_.push_back(std::make_unique<EmulatedPool>(spec.netns_stem + id, spec.nodes, spec.rate,
                                                    dir_ / "netsim.log"));
    ASSERT_TRUE(pools_.back()->ok()) << read_file(dir_ / "netsim.log");
  }
  for (auto step : {&E2eCluster::start_sim, &E2eCluster::start_webhook, &E2eCluster::install}) {
    (this->*step)();
    if (::testing::Test::HasFatalFailure()) return;
  }
}

void E2eCluster::start_sim() {
  const auto user = [](const std::string& token, const std::string& name) {
    return token + "-" + std::to_string(getpid()) + "=" + name;
  };
  std::vector<std::string> argv = {COMMGATE_SIM_BIN,
                                   "--port",
                                   "0",
                                   "--kubeconfig-out",
                                   admin_kubeconfig_,
                                   "--user",
                                   user("operator", kE2eOperatorUser),
                                   "--user",
                                   user("webhook", kE2eWebhookUser),
                                   "--user",
                                   user("alice", kE2eResearcher + ",researchers"),
                                   "--kubeconfig-out-user",
                                   kE2eOperatorUser + "=" + (dir_ / "operator.kubeconfig").string(),
                                   "--kubeconfig-out-user",
                                   kE2eWebhookUser + "=" + (dir_ / "webhook.kubeconfig").string(),
                                   "--kubeconfig-out-user",
                                   kE2eResearcher + "=" + (dir_ / "alice.kubeconfig").string(),
                                   "--pod-dir",
                                   (dir_ / "pods").string()};
  // Each pool on its own emulated link (or the host's network); a GPU each, as GPU nodes
  // advertise.
  const std::string id = std::to_string(getpid() % 100000);
  for (const E2ePoolSpec& spec : options_.pools) {
    argv.push_back("--node-group");
    argv.push_back(std::to_string(spec.nodes) + ",gpus=1" +
                   (spec.rate.empty() ? "" : ",netns=" + spec.netns_stem + id) +
                   ",label=commgate.io/pool=" + spec.label);
  }
  if (options_.kueue) argv.push_back("--kueue");
  sim_ = std::make_unique<ChildProcess>(argv, dir_ / "sim.log");
  ASSERT_NE(sim_->wait_for_port(std::regex("listening on https://[^ ]+ port ([0-9]+)")), 0)
      << sim_->output();
}

void E2eCluster::start_webhook() {
  const auto issued = ca_.issue_serving_cert("commgate-webhook", 2, std::chrono::hours(24),
                                             {"commgate-webhook.commgate-system.svc"});
  std::ofstream(dir_ / "webhook.crt") << issued.cert_pem;
  std::ofstream(dir_ / "webhook.key") << issued.key_pem;
  // The webhook reads policies and profiles from the sim as its own service account.
  webhook_ = std::make_unique<ChildProcess>(
      std::vector<std::string>{COMMGATE_BINARY, "webhook", "--port", "0", "--address", "127.0.0.1",
                               "--tls-cert-file", (dir_ / "webhook.crt").string(),
                               "--tls-private-key-file", (dir_ / "webhook.key").string(),
                               "--kubeconfig", (dir_ / "webhook.kubeconfig").string()},
      dir_ / "webhook.log");
  const uint16_t port =
      webhook_->wait_for_port(std::regex("listening on 127\\.0\\.0\\.1:([0-9]+)"));
  ASSERT_NE(port, 0) << webhook_->output();
  // The sim learns where the webhook's Service listens (it has no cluster DNS).
  std::ofstream(dir_ / "service.json") << json({{"name", "commgate-webhook"},
                                                {"namespace", "commgate-system"},
                                                {"address", "127.0.0.1:" + std::to_string(port)}})
                                              .dump();
  const E2eResult r =
      admin({"create", "--raw", "/sim/services", "-f", (dir_ / "service.json").string()});
  ASSERT_EQ(r.code, 0) << r.output;
}

void E2eCluster::install() {
  for (const char* crd : {"trainingjobs", "commprofiles", "commpolicies"}) {
    const E2eResult r = admin({"apply", "-f", kE2eSource + "/crds/" + crd + ".commgate.io.yaml"});
    ASSERT_EQ(r.code, 0) << r.output;
  }
  {
    std::ofstream namespaces(dir_ / "namespaces.yaml");
    for (const std::string& ns : options_.namespaces)
      namespaces << "---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: " << ns << "\n";
  }
  const E2eResult created = admin({"apply", "-f", (dir_ / "namespaces.yaml").string()});
  ASSERT_EQ(created.code, 0) << created.output;
  // The configurations as shipped, with the test CA as the caBundle.
  std::string configs = read_file(kE2eSource + "/deploy/webhook-configurations.yaml");
  const std::string placeholder = "REPLACE_WITH_BASE64_CA_BUNDLE";
  for (auto at = configs.find(placeholder); at != std::string::npos; at = configs.find(placeholder))
    configs.replace(at, placeholder.size(), base64_encode(ca_.cert_pem()));
  std::ofstream(dir_ / "webhook-configurations.yaml") << configs;
  const E2eResult hooks = admin({"apply", "-f", (dir_ / "webhook-configurations.yaml").string()});
  ASSERT_EQ(hooks.code, 0) << hooks.output;
}

void E2eCluster::apply_through_webhook(const fs::path& path) {
  // The webhook refuses (503) until its caches have listed the CRDs applied just now.
  E2eResult applied{-1, ""};
  poll_until(
      [&] {
        applied = admin({"apply", "-f", path.string()});
        return applied.code == 0 || applied.output.find("has not loaded") == std::string::npos;
      },
      60s);
  ASSERT_EQ(applied.code, 0) << applied.output << webhook_output();
}

void E2eCluster::create_files(const std::vector<fs::path>& paths) {
  for (const fs::path& path : paths) {
    const E2eResult r = admin({"create", "-f", path.string()});
    ASSERT_EQ(r.code, 0) << path << ": " << r.output;
  }
}

std::string E2eCluster::probe_command() {
  return std::string(COMMGATE_PROBE_BIN) + ",--threads,1";
}

std::unique_ptr<ChildProcess> E2eCluster::operator_replica(
    const fs::path& log, const std::vector<std::string>& extra_args) {
  // The health server's certificate (the operator serves /healthz over TLS).
  if (!fs::exists(dir_ / "operator.crt")) {
    const auto issued = ca_.issue_serving_cert("commgate-operator", 3, std::chrono::hours(24),
                                               {"commgate-operator.commgate-system.svc"});
    std::ofstream(dir_ / "operator.crt") << issued.cert_pem;
    std::ofstream(dir_ / "operator.key") << issued.key_pem;
  }
  std::vector<std::string> argv = {COMMGATE_BINARY,
                                   "operator",
                                   "--kubeconfig",
                                   (dir_ / "operator.kubeconfig").string(),
                                   "--namespace",
                                   "commgate-system",
                                   "--probe-command",
                                   probe_command(),
                                   "--port",
                                   "0",
                                   "--address",
                                   "127.0.0.1",
                                   "--tls-cert-file",
                                   (dir_ / "operator.crt").string(),
                                   "--tls-private-key-file",
                                   (dir_ / "operator.key").string()};
  argv.insert(argv.end(), extra_args.begin(), extra_args.end());
  auto replica = std::make_unique<ChildProcess>(argv, log);
  EXPECT_NE(
      replica->wait_for_port(std::regex("serving /healthz /readyz /metrics on [^ ]*:([0-9]+)")), 0)
      << replica->output();
  return replica;
}

bool E2eCluster::wait_for_output(ChildProcess& process, const std::string& needle,
                                 std::chrono::milliseconds timeout) {
  return poll_until([&] { return process.output().find(needle) != std::string::npos; }, timeout,
                    100ms);
}

E2eResult E2eCluster::kubectl(const std::string& kubeconfig, std::vector<std::string> args,
                              std::chrono::milliseconds timeout) {
  std::vector<std::string> argv = {
      COMMGATE_KUBECTL,          "--kubeconfig",         kubeconfig, "--cache-dir",
      (dir_ / "cache").string(), "--request-timeout=20s"};
  argv.insert(argv.end(), args.begin(), args.end());
  ChildProcess p(argv, dir_ / "kubectl" / ("call-" + std::to_string(++calls_) + ".out"));
  const int code = p.wait_exit(timeout);
  return {code, p.output()};
}

E2eResult E2eCluster::admin(std::vector<std::string> args) {
  return kubectl(admin_kubeconfig_, std::move(args));
}

E2eResult E2eCluster::alice(std::vector<std::string> args) {
  return kubectl((dir_ / "alice.kubeconfig").string(), std::move(args));
}

json E2eCluster::get_json(std::vector<std::string> args) {
  args.insert(args.end(), {"-o", "json"});
  const E2eResult r = admin(args);
  if (r.code != 0) return json();
  try {
    return json::parse(r.output);
  } catch (const json::exception&) {
    return json();
  }
}

std::map<std::string, std::string> E2eCluster::probe_jobs() {
  std::map<std::string, std::string> out;
  const json list = get_json({"get", "jobs", "-n", "commgate-system", "-l",
                              "app.kubernetes.io/managed-by=commgate,commgate.io/role=probe"});
  if (list.is_object())
    for (const auto& j : list.value("items", json::array()))
      out[j["metadata"]["name"]] = j["metadata"]["uid"];
  return out;
}

int E2eCluster::probe_job_creates(const std::string& name_prefix) {
  const E2eResult r = admin({"get", "--raw", "/sim/audit"});
  if (r.code != 0) return -1;
  int n = 0;
  const json audit = json::parse(r.output, nullptr, false);
  if (!audit.is_object()) return -1;
  for (const json& e : audit.value("items", json::array())) {
    const json ref = e.value("objectRef", json::object());
    n += e.value("verb", "") == "create" && ref.value("resource", "") == "jobs" &&
         ref.value("namespace", "") == "commgate-system" &&
         ref.value("name", "").rfind(name_prefix, 0) == 0 &&
         e.value("responseStatus", json::object()).value("code", 0) == 201;
  }
  return n;
}

int E2eCluster::probes_created() {
  const json list = get_json({"get", "events", "-A", "--field-selector", "reason=ProbeCreated"});
  int n = 0;
  if (list.is_object())
    for (const auto& e : list.value("items", json::array())) {
      const json series = e.value("series", json::object());
      n += series.is_object() ? series.value("count", 1) : 1;
    }
  return n;
}

std::vector<json> E2eCluster::probe_pods() {
  const json list = get_json({"get", "pods", "-n", "commgate-system", "-l",
                              "app.kubernetes.io/managed-by=commgate,commgate.io/role=probe"});
  return list.is_object() ? list.value("items", json::array()).get<std::vector<json>>()
                          : std::vector<json>{};
}

std::string E2eCluster::pod_logs(const std::string& ns, const std::string& prefix) {
  std::string out;
  std::error_code ec;
  for (const auto& pod : fs::directory_iterator(dir_ / "pods", ec)) {
    if (pod.path().filename().string().rfind(ns + "_" + prefix, 0) != 0) continue;
    for (const auto& file : fs::directory_iterator(pod.path(), ec))
      if (file.path().extension() == ".log")
        out += "--- " + pod.path().filename().string() + "/" + file.path().filename().string() +
               "\n" + read_file(file.path());
  }
  return out;
}

std::string E2eCluster::cluster_dump() {
  std::string out = admin({"get", "jobs,pods", "-A", "-o", "wide"}).output;
  out += admin({"describe", "pods", "-n", "commgate-system"}).output;
  return out;
}

}  // namespace commgate::testing
