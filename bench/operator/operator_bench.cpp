// commgate-operator-bench: the real `commgate operator` against the real `commgate-sim`
// (both child processes, on loopback HTTPS), as issue #10's performance section asks:
//  1. 1,000 TrainingJobs submitted to a pool whose CommProfile holds a fresh measurement (a
//     real recorded probe result, examples/measurements/, made a profile by `commgate
//     profile --from-probe` with its measuredAt moved to now): the time from the first
//     submission until every job has status.decision, the API requests per job (the sim's
//     counter, GET /sim/requests, less this program's own), the operator's peak RSS (VmHWM);
//  2. 9,000 more TrainingJobs (10,000 in all), then a second operator started as a standby
//     (the Lease is held by another identity, so it only lists and watches): its RSS once
//     ready, i.e. with 10,000 TrainingJobs (and their workload Jobs) in its caches.
// The jobs are submitted by this program over one keep-alive HTTPS connection (the sim's
// REST API, not kubectl: kubectl's process start costs more than the operator's work).
// Prints each figure and its ratio to the goal (<= 30 s, <= 150 MB).
//
//   commgate-operator-bench [--jobs 1000] [--cached 10000] [--qps 0] [--concurrency 4]
//                           [--bin DIR] [--source DIR]
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "core/yaml_json.h"
#include "tests/server/test_client.h"
#include "tests/support/child_process.h"

namespace {

namespace fs = std::filesystem;
using commgate::server::testing::Client;
using commgate::server::testing::Reply;
using commgate::testing::ChildProcess;
using nlohmann::json;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

constexpr const char* kToken = "operator-bench-token";
constexpr const char* kNamespace = "bench";

double status_mib(pid_t pid, const std::string& field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind(field + ":", 0) == 0) return std::stod(line.substr(field.size() + 1)) / 1024.0;
  return 0;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  if (!in) throw std::runtime_error("cannot read " + p.string());
  std::string text;
  for (std::string line; std::getline(in, line);) text += line + "\n";
  return text;
}

std::string run_output(const std::string& command) {
  std::string out;
  FILE* f = popen(command.c_str(), "r");
  if (!f) throw std::runtime_error("cannot run " + command);
  char buf[4096];
  for (std::size_t n; (n = fread(buf, 1, sizeof buf, f)) > 0;) out.append(buf, n);
  if (pclose(f) != 0) throw std::runtime_error(command + " failed:\n" + out);
  return out;
}

std::string rfc3339_now() {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

class Api {
 public:
  Api(uint16_t port, const std::string& ca) : client_(port, ca) {
    const std::string err = client_.connect();
    if (!err.empty()) throw std::runtime_error("connect: " + err);
  }
  Reply call(const std::string& method, const std::string& target, const json& body = nullptr) {
    ++requests_;
    return client_.request(
        method, target, body.is_null() ? "" : body.dump(),
        {{"Authorization", std::string("Bearer ") + kToken}, {"Content-Type", "application/json"}});
  }
  json must(const std::string& method, const std::string& target, const json& body, int want) {
    const Reply r = call(method, target, body);
    if (r.status != want)
      throw std::runtime_error(method + " " + target + ": " + std::to_string(r.status) + " " +
                               r.body);
    return json::parse(r.body);
  }
  uint64_t served() {
    const Reply r = client_.request("GET", "/sim/requests", "",
                                    {{"Authorization", std::string("Bearer ") + kToken}});
    return json::parse(r.body)["apiRequests"].get<uint64_t>();
  }
  uint64_t own_requests() const { return requests_; }

 private:
  Client client_;
  uint64_t requests_ = 0;
};

std::string collection(const json& o) {
  const std::string api_version = o["apiVersion"];
  const std::string kind = o["kind"];
  if (kind == "CustomResourceDefinition")
    return "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
  if (kind == "CommPolicy") return "/apis/commgate.io/v1alpha1/commpolicies";
  if (kind == "CommProfile") return "/apis/commgate.io/v1alpha1/commprofiles";
  if (kind == "Namespace") return "/api/v1/namespaces";
  throw std::runtime_error("no collection for " + kind + " " + api_version);
}

json training_job(const json& example, int i) {
  json job = example;
  job["metadata"] = {{"name", "bench-" + std::to_string(i)}, {"namespace", kNamespace}};
  return job;
}

// The decisions' actions seen by the last decided() call ("Downsize": 1000).
std::map<std::string, int> g_actions;

// How many of the namespace's TrainingJobs have status.decision, and how many there are.
std::pair<int, int> decided(Api& api) {
  g_actions.clear();
  const json list = api.must(
      "GET", std::string("/apis/commgate.io/v1alpha1/namespaces/") + kNamespace + "/trainingjobs",
      nullptr, 200);
  int n = 0;
  for (const auto& item : list["items"])
    if (item.contains("status") && item["status"].contains("decision")) {
      ++n;
      ++g_actions[item["status"]["decision"].value("action", "?")];
    }
  return {n, static_cast<int>(list["items"].size())};
}

bool wait_ready(uint16_t port, const std::string& ca, std::chrono::seconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    Client c(port, ca);
    if (c.connect().empty() && c.request("GET", "/readyz").status == 200) return true;
    std::this_thread::sleep_for(100ms);
  }
  return false;
}

std::vector<std::string> operator_argv(const std::string& bin, const std::string& dir,
                                       const std::string& kubeconfig, bool leader_elect,
                                       const std::string& qps, const std::string& concurrency) {
  return {bin + "/commgate",
          "operator",
          "--kubeconfig",
          kubeconfig,
          "--namespace",
          "commgate-system",
          "--port",
          "0",
          "--address",
          "127.0.0.1",
          "--tls-cert-file",
          dir + "/tls.crt",
          "--tls-private-key-file",
          dir + "/tls.key",
          std::string("--leader-elect=") + (leader_elect ? "true" : "false"),
          "--kube-api-qps",
          qps,
          "--kube-api-burst",
          "1000",
          "--concurrency",
          concurrency};
}

const std::regex kServing("serving /healthz /readyz /metrics on [^ ]*:([0-9]+)");

}  // namespace

int main(int argc, char** argv) {
  int jobs = 1000, cached = 10000;
  std::string qps = "0", concurrency = "4";
  fs::path bin = fs::canonical("/proc/self/exe").parent_path();
  fs::path source = COMMGATE_SOURCE_DIR;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "--jobs")
      jobs = std::stoi(v);
    else if (a == "--cached")
      cached = std::stoi(v);
    else if (a == "--qps")
      qps = v;
    else if (a == "--concurrency")
      concurrency = v;
    else if (a == "--bin")
      bin = v;
    else if (a == "--source")
      source = v;
    else {
      std::cerr << "unknown flag " << a << "\n";
      return 2;
    }
  }
  try {
    char tmpl[] = "/tmp/commgate-operator-bench-XXXXXX";
    if (!mkdtemp(tmpl)) throw std::runtime_error("mkdtemp failed");
    const std::string dir = tmpl;
    const std::string kubeconfig = dir + "/kubeconfig";
    ChildProcess sim({(bin / "commgate-sim").string(), "--port", "0", "--token", kToken,
                      "--kubeconfig-out", kubeconfig, "--history", "100000"},
                     dir + "/sim.log");
    const uint16_t port = sim.wait_for_port(std::regex(" port ([0-9]+)"));
    if (port == 0) throw std::runtime_error("commgate-sim did not start:\n" + sim.output());
    std::smatch m;
    const std::string sim_out = sim.output();
    if (!std::regex_search(sim_out, m, std::regex("CA certificate (\\S+)")))
      throw std::runtime_error("no CA in " + sim_out);
    const std::string ca = m[1];
    const std::string pki = fs::path(ca).parent_path().string();
    Api api(port, ca);

    // The cluster: CRDs, the namespaces, the default CommPolicy, the pool's fresh profile.
    for (const char* crd : {"commpolicies", "commprofiles", "trainingjobs"})
      for (const auto& o : commgate::parse_manifests(
               slurp(source / "crds" / (std::string(crd) + ".commgate.io.yaml"))))
        api.must("POST", collection(o), o, 201);
    for (const char* ns : {kNamespace, "commgate-system"})
      api.must("POST", "/api/v1/namespaces",
               {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", ns}}}}, 201);
    for (const auto& o :
         commgate::parse_manifests(slurp(source / "examples/policies/default.yaml")))
      api.must("POST", collection(o), o, 201);
    const json example =
        commgate::parse_manifests(slurp(source / "examples/jobs/bert-large-350m.yaml")).at(0);
    std::string selector;
    const json node_selector = example["spec"].value("nodeSelector", json::object());
    for (const auto& [k, v] : node_selector.items())
      selector += (selector.empty() ? "" : ",") + k + "=" + v.get<std::string>();
    const std::string measurement =
        (source / "examples/measurements/probe-netns-2-nodes-1gbit-350M-params.json").string();
    std::string profile_text =
        run_output((bin / "commgate").string() + " profile --from-probe " + measurement +
                   " --node-selector " + selector + " -o json 2>/dev/null");
    profile_text = std::regex_replace(profile_text, std::regex("\"measuredAt\": \"[^\"]*\""),
                                      "\"measuredAt\": \"" + rfc3339_now() + "\"");
    json profile = json::parse(profile_text);
    const json created = api.must("POST", collection(profile), profile, 201);
    profile["metadata"]["resourceVersion"] = created["metadata"]["resourceVersion"];
    api.must("PUT",
             "/apis/commgate.io/v1alpha1/commprofiles/" +
                 profile["metadata"]["name"].get<std::string>() + "/status",
             profile, 200);

    // 1. The operator, then `jobs` TrainingJobs.
    auto op = std::make_unique<ChildProcess>(
        operator_argv(bin.string(), pki, kubeconfig, false, qps, concurrency), dir + "/op.log");
    const uint16_t op_port = op->wait_for_port(kServing);
    if (op_port == 0 || !wait_ready(op_port, ca, 60s))
      throw std::runtime_error("the operator did not become ready:\n" + op->output());
    const uint64_t served_before = api.served();
    const uint64_t own_before = api.own_requests();
    const auto start = Clock::now();
    const std::string tjs =
        std::string("/apis/commgate.io/v1alpha1/namespaces/") + kNamespace + "/trainingjobs";
    for (int i = 0; i < jobs; ++i) api.must("POST", tjs, training_job(example, i), 201);
    const double submitted_s = std::chrono::duration<double>(Clock::now() - start).count();
    std::pair<int, int> d{0, 0};
    while ((d = decided(api)).first < jobs) {
      if (Clock::now() - start > 600s) break;
      std::this_thread::sleep_for(100ms);
    }
    const double decided_s = std::chrono::duration<double>(Clock::now() - start).count();
    // Settle: the workloads the decisions launch (Jobs, Services) are part of the cost.
    std::this_thread::sleep_for(2s);
    const uint64_t operator_requests =
        api.served() - served_before - (api.own_requests() - own_before);
    const double peak = status_mib(op->pid(), "VmHWM");
    const double rss = status_mib(op->pid(), "VmRSS");
    std::printf(
        "operator benchmark: %d TrainingJobs, operator --concurrency %s --kube-api-qps %s\n", jobs,
        concurrency.c_str(), qps.c_str());
    std::printf("  submitted in %.2f s (this program, one HTTPS connection)\n", submitted_s);
    std::printf("  all decided after %.2f s (%d/%d)   goal <= 30 s: ratio %.2f\n", decided_s,
                d.first, jobs, decided_s / 30.0);
    std::printf("  decisions:");
    for (const auto& [action, count] : g_actions) std::printf(" %s %d", action.c_str(), count);
    std::printf("\n");
    std::printf("  operator API requests: %llu = %.2f per job\n",
                static_cast<unsigned long long>(operator_requests),
                static_cast<double>(operator_requests) / jobs);
    std::printf("  operator RSS %.1f MiB, peak (VmHWM) %.1f MiB\n", rss, peak);
    op.reset();  // SIGTERM

    // 2. 10,000 TrainingJobs in all, cached by a standby replica.
    for (int i = jobs; i < cached; ++i) api.must("POST", tjs, training_job(example, i), 201);
    const json lease = {
        {"apiVersion", "coordination.k8s.io/v1"},
        {"kind", "Lease"},
        {"metadata", {{"name", "commgate-operator"}, {"namespace", "commgate-system"}}},
        {"spec",
         {{"holderIdentity", "another-replica"},
          {"leaseDurationSeconds", 3600},
          {"acquireTime", rfc3339_now().substr(0, 19) + ".000000Z"},
          {"renewTime", rfc3339_now().substr(0, 19) + ".000000Z"}}}};
    const Reply put = api.call(
        "PUT", "/apis/coordination.k8s.io/v1/namespaces/commgate-system/leases/commgate-operator",
        lease);
    if (put.status != 200 && put.status != 201)
      api.must("POST", "/apis/coordination.k8s.io/v1/namespaces/commgate-system/leases", lease,
               201);
    ChildProcess standby(operator_argv(bin.string(), pki, kubeconfig, true, qps, concurrency),
                         dir + "/standby.log");
    const uint16_t standby_port = standby.wait_for_port(kServing);
    if (standby_port == 0 || !wait_ready(standby_port, ca, 120s))
      throw std::runtime_error("the standby did not become ready:\n" + standby.output());
    std::this_thread::sleep_for(2s);
    const double cached_rss = status_mib(standby.pid(), "VmRSS");
    const double cached_peak = status_mib(standby.pid(), "VmHWM");
    std::printf(
        "  standby with %d TrainingJobs cached: RSS %.1f MiB (peak %.1f)   goal <= 150 MB: "
        "ratio %.2f\n",
        decided(api).second, cached_rss, cached_peak, cached_rss * 1.048576 / 150.0);
    std::error_code ec;
    fs::remove_all(dir, ec);
    return d.first < jobs ? 1 : 0;
  } catch (const std::exception& e) {
    std::cerr << "commgate-operator-bench: " << e.what() << "\n";
    return 1;
  }
}
