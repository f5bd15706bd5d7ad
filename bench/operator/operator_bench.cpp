// commgate-operator-bench: the real `commgate operator` against the real `commgate-sim`
// (both child processes, on loopback HTTPS), for issues #10 and #27. For each size N in
// --jobs (a fresh simulated cluster each):
//  1. N TrainingJobs submitted to a pool whose CommProfile holds a fresh measurement (a
//     real recorded probe result, examples/measurements/, made a profile by `commgate
//     profile --from-probe` with its measuredAt moved to now): the time from the first
//     submission until every job has status.decision, that time per job (the figure whose
//     growth with N matters), the API requests per job (the sim's counter, GET
//     /sim/requests, less this program's own), the operator's RSS and peak (VmHWM);
// then, on the last size's cluster:
//  2. each workload Job's pods, made as the sim's Job controller makes them
//     (sim/job_controller.h pod_for_job; the sim runs no controllers without nodes), then a
//     second operator started as a standby (the Lease is held by another identity, so it
//     only lists and watches): its RSS once ready, with the N decided TrainingJobs, their
//     workload Jobs and pods in its caches, and that less the leader's RSS when it started
//     with empty caches, per job: what one TrainingJob costs the operator;
//  3. --unrelated-pods pods that are not commgate's (another namespace, no commgate
//     labels): the standby's RSS after they were added, and a fresh standby's: the watches
//     are label-selected, so the change should be noise.
// The jobs are submitted by this program over one keep-alive HTTPS connection (the sim's
// REST API, not kubectl: kubectl's process start costs more than the operator's work).
// Progress is read from the operator's decision counter (a list of 50,000 jobs every
// 100 ms would load the sim more than the operator does); the end is confirmed by a list.
// Prints each figure and its ratio to issue #27's goals (10,000 jobs in <= 60 s, the time
// per job flat within 20% from the first size, a standby <= 200 MiB, unrelated pods < 5%).
//
//   commgate-operator-bench [--jobs 1000,10000] [--unrelated-pods 50000] [--qps 0]
//                           [--concurrency 4] [--bin DIR] [--source DIR]
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "core/yaml_json.h"
#include "sim/job_controller.h"
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
constexpr const char* kUnrelatedNamespace = "unrelated";

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
  // A page of a large list can take the sim seconds: 60 s, not the test client's 5.
  Reply call(const std::string& method, const std::string& target, const json& body = nullptr) {
    ++requests_;
    return client_.request(
        method, target, body.is_null() ? "" : body.dump(),
        {{"Authorization", std::string("Bearer ") + kToken}, {"Content-Type", "application/json"}},
        std::chrono::milliseconds(60'000));
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

// Every item of a collection, in pages of 1,000 (one list of 50,000 TrainingJobs is 250 MB).
std::vector<json> list_all(Api& api, const std::string& path) {
  std::vector<json> items;
  std::string token;
  do {
    std::string escaped;
    for (const unsigned char c : token) {
      char hex[4];
      std::snprintf(hex, sizeof hex, "%%%02X", c);
      escaped += std::isalnum(c) ? std::string(1, static_cast<char>(c)) : std::string(hex);
    }
    const json page = api.must(
        "GET", path + "?limit=1000" + (token.empty() ? "" : "&continue=" + escaped), nullptr, 200);
    for (const json& item : page["items"]) items.push_back(item);
    token = page["metadata"].value("continue", "");
  } while (!token.empty());
  return items;
}

// The decisions' actions seen by the last decided() call ("Downsize": 1000).
std::map<std::string, int> g_actions;

// How many of the namespace's TrainingJobs have status.decision, and how many there are.
std::pair<int, int> decided(Api& api) {
  g_actions.clear();
  const std::vector<json> items = list_all(
      api, std::string("/apis/commgate.io/v1alpha1/namespaces/") + kNamespace + "/trainingjobs");
  int n = 0;
  for (const auto& item : items)
    if (item.contains("status") && item["status"].contains("decision")) {
      ++n;
      ++g_actions[item["status"]["decision"].value("action", "?")];
    }
  return {n, static_cast<int>(items.size())};
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

// The decisions the operator has made so far: the sum of its
// commgate_operator_decisions_total series (0 while it cannot be read).
double decisions_counted(uint16_t port, const std::string& ca) {
  Client c(port, ca);
  if (!c.connect().empty()) return 0;
  const Reply r = c.request("GET", "/metrics");
  if (r.status != 200) return 0;
  double sum = 0;
  std::istringstream in(r.body);
  for (std::string line; std::getline(in, line);)
    if (line.rfind("commgate_operator_decisions_total{", 0) == 0)
      sum += std::stod(line.substr(line.rfind(' ') + 1));
  return sum;
}

std::vector<int> parse_sizes(const std::string& text) {
  std::vector<int> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    const int n = std::stoi(item);
    if (n <= 0) throw std::invalid_argument("--jobs: sizes must be positive, got " + item);
    out.push_back(n);
  }
  if (out.empty()) throw std::invalid_argument("--jobs: no size");
  return out;
}

// One simulated cluster: the sim, its CRDs and namespaces, the default CommPolicy and the
// pool's fresh CommProfile; `example` is the TrainingJob every submission copies.
struct Cluster {
  std::string dir, kubeconfig, ca, pki;
  std::unique_ptr<ChildProcess> sim;
  std::unique_ptr<Api> api;
  json example;

  Cluster(const fs::path& bin, const fs::path& source) {
    char tmpl[] = "/tmp/commgate-operator-bench-XXXXXX";
    if (!mkdtemp(tmpl)) throw std::runtime_error("mkdtemp failed");
    dir = tmpl;
    kubeconfig = dir + "/kubeconfig";
    sim = std::make_unique<ChildProcess>(
        std::vector<std::string>{(bin / "commgate-sim").string(), "--port", "0", "--token", kToken,
                                 "--kubeconfig-out", kubeconfig, "--history", "200000"},
        dir + "/sim.log");
    const uint16_t port = sim->wait_for_port(std::regex(" port ([0-9]+)"));
    if (port == 0) throw std::runtime_error("commgate-sim did not start:\n" + sim->output());
    std::smatch m;
    const std::string sim_out = sim->output();
    if (!std::regex_search(sim_out, m, std::regex("CA certificate (\\S+)")))
      throw std::runtime_error("no CA in " + sim_out);
    ca = m[1];
    pki = fs::path(ca).parent_path().string();
    api = std::make_unique<Api>(port, ca);

    for (const char* crd : {"commpolicies", "commprofiles", "trainingjobs"})
      for (const auto& o : commgate::parse_manifests(
               slurp(source / "crds" / (std::string(crd) + ".commgate.io.yaml"))))
        api->must("POST", collection(o), o, 201);
    for (const char* ns : {kNamespace, "commgate-system", kUnrelatedNamespace})
      api->must("POST", "/api/v1/namespaces",
                {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", ns}}}}, 201);
    for (const auto& o :
         commgate::parse_manifests(slurp(source / "examples/policies/default.yaml")))
      api->must("POST", collection(o), o, 201);
    example = commgate::parse_manifests(slurp(source / "examples/jobs/bert-large-350m.yaml")).at(0);
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
    const json created = api->must("POST", collection(profile), profile, 201);
    profile["metadata"]["resourceVersion"] = created["metadata"]["resourceVersion"];
    api->must("PUT",
              "/apis/commgate.io/v1alpha1/commprofiles/" +
                  profile["metadata"]["name"].get<std::string>() + "/status",
              profile, 200);
  }
  ~Cluster() {
    api.reset();
    sim.reset();
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  Cluster(const Cluster&) = delete;
  Cluster& operator=(const Cluster&) = delete;
};

// An operator child process, ready (or throws with its output).
std::unique_ptr<ChildProcess> start_operator(const fs::path& bin, const Cluster& cluster,
                                             bool leader_elect, const std::string& qps,
                                             const std::string& concurrency, const std::string& log,
                                             uint16_t* port) {
  auto op = std::make_unique<ChildProcess>(
      operator_argv(bin.string(), cluster.pki, cluster.kubeconfig, leader_elect, qps, concurrency),
      cluster.dir + "/" + log);
  *port = op->wait_for_port(kServing);
  if (*port == 0 || !wait_ready(*port, cluster.ca, 300s))
    throw std::runtime_error("the operator (" + log + ") did not become ready:\n" + op->output());
  return op;
}

// The Lease held by another identity, so an operator started with leader election stays
// a standby that only lists and watches.
void hold_lease_elsewhere(Api& api) {
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
    api.must("POST", "/apis/coordination.k8s.io/v1/namespaces/commgate-system/leases", lease, 201);
}

// A pod that is not commgate's: no commgate labels, in another namespace.
json unrelated_pod(int i) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata",
           {{"name", "web-" + std::to_string(i)},
            {"namespace", kUnrelatedNamespace},
            {"labels", {{"app", "web"}}}}},
          {"spec",
           {{"containers", json::array({{{"name", "web"},
                                         {"image", "registry.example/web:1"},
                                         {"resources", {{"requests", {{"cpu", "100m"}}}}}}})}}}};
}

struct SizeResult {
  int jobs = 0;
  double decided_s = 0, per_job_ms = 0, requests_per_job = 0, rss = 0, peak = 0;
};

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> sizes = {1000, 10000};
  int unrelated = 50000;
  std::string qps = "0", concurrency = "4";
  fs::path bin = fs::canonical("/proc/self/exe").parent_path();
  fs::path source = COMMGATE_SOURCE_DIR;
  try {
    for (int i = 1; i < argc; i += 2) {
      const std::string a = argv[i];
      if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
      const std::string v = argv[i + 1];
      if (a == "--jobs")
        sizes = parse_sizes(v);
      else if (a == "--unrelated-pods")
        unrelated = std::stoi(v);
      else if (a == "--qps")
        qps = v;
      else if (a == "--concurrency")
        concurrency = v;
      else if (a == "--bin")
        bin = v;
      else if (a == "--source")
        source = v;
      else
        throw std::invalid_argument("unknown flag " + a);
    }
  } catch (const std::exception& e) {
    std::cerr << "commgate-operator-bench: " << e.what() << "\n";
    return 2;
  }
  try {
    std::printf("operator benchmark: operator --concurrency %s --kube-api-qps %s\n",
                concurrency.c_str(), qps.c_str());
    std::vector<SizeResult> results;
    std::unique_ptr<Cluster> cluster;
    double empty_rss = 0;  // the last size's operator, ready with empty caches
    bool all_decided = true;
    const std::string tjs =
        std::string("/apis/commgate.io/v1alpha1/namespaces/") + kNamespace + "/trainingjobs";
    for (const int jobs : sizes) {
      cluster.reset();
      cluster = std::make_unique<Cluster>(bin, source);
      Api& api = *cluster->api;
      uint16_t op_port = 0;
      auto op = start_operator(bin, *cluster, false, qps, concurrency, "op.log", &op_port);
      empty_rss = status_mib(op->pid(), "VmRSS");
      const uint64_t served_before = api.served();
      const uint64_t own_before = api.own_requests();
      const auto start = Clock::now();
      for (int i = 0; i < jobs; ++i) api.must("POST", tjs, training_job(cluster->example, i), 201);
      const double submitted_s = std::chrono::duration<double>(Clock::now() - start).count();
      const auto limit = std::max<std::chrono::seconds>(600s, std::chrono::seconds(jobs / 50));
      std::pair<int, int> d{0, 0};
      while (Clock::now() - start < limit) {
        if (decisions_counted(op_port, cluster->ca) >= jobs && (d = decided(api)).first >= jobs)
          break;
        std::this_thread::sleep_for(200ms);
      }
      const double decided_s = std::chrono::duration<double>(Clock::now() - start).count();
      if (d.first < jobs) all_decided = false;
      // Settle: the workloads the decisions launch (Jobs, Services) are part of the cost.
      std::this_thread::sleep_for(2s);
      const uint64_t operator_requests =
          api.served() - served_before - (api.own_requests() - own_before);
      SizeResult r;
      r.jobs = jobs;
      r.decided_s = decided_s;
      r.per_job_ms = decided_s * 1000.0 / jobs;
      r.requests_per_job = static_cast<double>(operator_requests) / jobs;
      r.rss = status_mib(op->pid(), "VmRSS");
      r.peak = status_mib(op->pid(), "VmHWM");
      results.push_back(r);
      std::printf(
          "  %6d TrainingJobs: submitted in %.2f s; all decided (%d/%d) after %.2f s = "
          "%.2f ms per job; %.2f API requests per job; RSS %.1f MiB (peak %.1f)\n",
          jobs, submitted_s, d.first, jobs, decided_s, r.per_job_ms, r.requests_per_job, r.rss,
          r.peak);
      std::printf("         decisions:");
      for (const auto& [action, count] : g_actions) std::printf(" %s %d", action.c_str(), count);
      std::printf("\n");
      std::fflush(stdout);
      op.reset();  // SIGTERM
    }

    // The last size's cluster: a standby with its decided jobs cached, then with unrelated
    // pods added.
    Api& api = *cluster->api;
    hold_lease_elsewhere(api);
    const auto rss_of = [](const ChildProcess& p) {
      return std::pair<double, double>{status_mib(p.pid(), "VmRSS"), status_mib(p.pid(), "VmHWM")};
    };
    const std::string ns_path = std::string("/namespaces/") + kNamespace;
    const std::vector<json> workloads = list_all(api, "/apis/batch/v1" + ns_path + "/jobs");
    std::size_t pods = 0;
    for (const json& job : workloads) {
      const json& spec = job["spec"];
      const int parallelism = spec.value("parallelism", 1);
      const bool indexed = spec.value("completionMode", "") == "Indexed";
      for (int i = 0; i < parallelism; ++i, ++pods)
        api.must("POST", "/api/v1" + ns_path + "/pods",
                 commgate::sim::pod_for_job(job, indexed ? i : -1), 201);
    }
    uint16_t standby_port = 0;
    auto standby =
        start_operator(bin, *cluster, true, qps, concurrency, "standby.log", &standby_port);
    std::this_thread::sleep_for(2s);
    const auto [cached_rss, cached_peak] = rss_of(*standby);
    const int n = results.back().jobs;
    std::printf(
        "  standby with %d decided TrainingJobs, %zu workload Jobs and %zu pods cached: RSS "
        "%.1f MiB (peak %.1f)   goal <= 200 MiB: ratio %.2f\n",
        n, workloads.size(), pods, cached_rss, cached_peak, cached_rss / 200.0);
    std::printf(
        "  per TrainingJob with its Job and pods: (%.1f - %.1f MiB at start) / %d = %.1f "
        "KiB\n",
        cached_rss, empty_rss, n, (cached_rss - empty_rss) * 1024.0 / n);
    if (unrelated > 0) {
      // The running standby watches on while they are added (its watches are
      // label-selected: none should reach it), then a fresh one lists with them there.
      const auto start = Clock::now();
      const std::string path = std::string("/api/v1/namespaces/") + kUnrelatedNamespace + "/pods";
      for (int i = 0; i < unrelated; ++i) api.must("POST", path, unrelated_pod(i), 201);
      const double added_s = std::chrono::duration<double>(Clock::now() - start).count();
      std::this_thread::sleep_for(2s);
      const auto [running_rss, running_peak] = rss_of(*standby);
      standby.reset();
      uint16_t port = 0;
      auto fresh =
          start_operator(bin, *cluster, true, qps, concurrency, "standby-fresh.log", &port);
      std::this_thread::sleep_for(2s);
      const auto [fresh_rss, fresh_peak] = rss_of(*fresh);
      fresh.reset();
      const auto change = [&](double rss) { return (rss - cached_rss) / cached_rss * 100.0; };
      std::printf("  %d unrelated pods added in %.1f s; goal < 5%% change:\n", unrelated, added_s);
      std::printf(
          "    the standby that watched them arrive: RSS %.1f MiB (peak %.1f), %+.1f%%: "
          "ratio %.2f\n",
          running_rss, running_peak, change(running_rss), std::abs(change(running_rss)) / 5.0);
      std::printf(
          "    a standby started after them: RSS %.1f MiB (peak %.1f), %+.1f%%: ratio "
          "%.2f\n",
          fresh_rss, fresh_peak, change(fresh_rss), std::abs(change(fresh_rss)) / 5.0);
    }

    std::printf("  time per job by size (goal: flat within 20%% of the first):");
    for (const SizeResult& r : results)
      std::printf(" %d: %.2f ms (x%.2f)", r.jobs, r.per_job_ms,
                  r.per_job_ms / results.front().per_job_ms);
    std::printf("\n");
    for (const SizeResult& r : results)
      if (r.jobs == 10000)
        std::printf("  10,000 TrainingJobs decided in %.2f s   goal <= 60 s: ratio %.2f\n",
                    r.decided_s, r.decided_s / 60.0);
    cluster.reset();
    return all_decided ? 0 : 1;
  } catch (const std::exception& e) {
    std::cerr << "commgate-operator-bench: " << e.what() << "\n";
    return 1;
  }
}
