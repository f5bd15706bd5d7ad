// commgate-sim-scale-bench: the simulated API server at the scale issue 4 asks for —
// 10,000 objects and 100 concurrent watches — over real HTTPS on loopback, in one process.
// Prints the create rate, list latency (all at once, in pages, with a label selector),
// the fan-out latency of a write to every watch (from the write's send to each watcher's
// receipt), and the process's resident memory at each stage.
//
//   commgate-sim-scale-bench [--objects 10000] [--watches 100] [--writes 20]
//
// The server is the real commgate-sim binary in a child process (path: --sim, default next
// to this binary), so the memory figures are the server's alone (VmRSS and its peak,
// VmHWM, from /proc). docs/benchmarks.md records a run.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "tests/server/test_client.h"

namespace {

using commgate::server::testing::Client;
using nlohmann::json;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

const std::string kCms = "/api/v1/namespaces/default/configmaps";

// A field of /proc/PID/status in MiB ("VmRSS", "VmHWM").
double status_mib(pid_t pid, const std::string& field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(field + ":", 0) == 0) return std::stod(line.substr(field.size() + 1)) / 1024.0;
  }
  return 0;
}

// The simulated API server as a child process: its port, CA file and token.
struct Sim {
  pid_t pid = -1;
  uint16_t port = 0;
  std::string ca_file;
  std::string token = "scale-bench-token";

  Sim(const std::string& binary, int history) {
    int out[2];
    if (pipe(out) != 0) throw std::runtime_error("pipe failed");
    pid = fork();
    if (pid == 0) {
      dup2(out[1], STDOUT_FILENO);
      close(out[0]);
      close(out[1]);
      const std::string h = std::to_string(history);
      execl(binary.c_str(), binary.c_str(), "--port", "0", "--token", token.c_str(), "--history",
            h.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    close(out[1]);
    std::string text;
    char buf[512];
    while (text.find(" port ") == std::string::npos) {
      const ssize_t n = read(out[0], buf, sizeof buf);
      if (n <= 0) throw std::runtime_error("commgate-sim did not start: " + binary);
      text.append(buf, static_cast<std::size_t>(n));
    }
    close(out[0]);
    const auto ca = text.find("CA certificate ");
    ca_file = text.substr(ca + 15, text.find('\n', ca) - ca - 15);
    port = static_cast<uint16_t>(std::stoi(text.substr(text.find(" port ") + 6)));
  }
  ~Sim() {
    kill(pid, SIGTERM);
    waitpid(pid, nullptr, 0);
  }
  std::string memory() const {
    char line[96];
    std::snprintf(line, sizeof line, "server rss %.1f MiB (peak %.1f)", status_mib(pid, "VmRSS"),
                  status_mib(pid, "VmHWM"));
    return line;
  }
};

// A ConfigMap of about 1 KB with labels, as controllers' objects tend to be.
json object(int i) {
  json data = json::object();
  for (int k = 0; k < 8; ++k)
    data["key-" + std::to_string(k)] = std::string(100, static_cast<char>('a' + k));
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata",
           {{"name", "object-" + std::to_string(i)},
            {"labels", {{"app", "scale"}, {"shard", std::to_string(i % 100)}}}}},
          {"data", data}};
}

double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(p / 100.0 * static_cast<double>(v.size() - 1))];
}

struct Connection {
  std::unique_ptr<Client> client;
  std::vector<std::pair<std::string, std::string>> headers;
};

Connection connect(const Sim& api) {
  Connection c{std::make_unique<Client>(api.port, api.ca_file),
               {{"Authorization", "Bearer " + api.token}, {"Content-Type", "application/json"}}};
  const std::string err = c.client->connect();
  if (!err.empty()) throw std::runtime_error("connect: " + err);
  return c;
}

}  // namespace

int main(int argc, char** argv) {
  int objects = 10'000, watches = 100, writes = 20;
  std::string sim_binary =
      std::string(argv[0]).substr(0, std::string(argv[0]).rfind('/') + 1) + "commgate-sim";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--sim") {
      sim_binary = argv[i + 1];
      continue;
    }
    const int value = std::stoi(argv[i + 1]);
    if (flag == "--objects")
      objects = value;
    else if (flag == "--watches")
      watches = value;
    else if (flag == "--writes")
      writes = value;
    else {
      std::cerr << "usage: commgate-sim-scale-bench [--objects N] [--watches N] [--writes N] "
                   "[--sim PATH]\n";
      return 2;
    }
  }
  Sim api(sim_binary, objects + 1000);
  std::printf(
      "# commgate-sim scale: %d ConfigMaps of ~1 KB, %d watches, %d writes fanned out; "
      "%u cores\n",
      objects, watches, writes, std::thread::hardware_concurrency());
  std::printf("at start: %s\n", api.memory().c_str());

  // Create, on 4 keep-alive connections.
  {
    const auto t0 = Clock::now();
    std::atomic<int> next{0}, failures{0};
    std::vector<std::thread> creators;
    for (int t = 0; t < 4; ++t) {
      creators.emplace_back([&] {
        Connection c = connect(api);
        for (int i = next++; i < objects; i = next++) {
          if (c.client->request("POST", kCms, object(i).dump(), c.headers).status != 201)
            ++failures;
        }
      });
    }
    for (auto& t : creators) t.join();
    const double ms = ms_since(t0);
    std::printf("create: %d objects in %.0f ms (%.0f/s, 4 connections), %d failed; %s\n", objects,
                ms, objects / ms * 1000.0, failures.load(), api.memory().c_str());
  }

  // List latency.
  Connection lister = connect(api);
  std::string rv;
  {
    std::vector<double> full;
    std::size_t bytes = 0;
    for (int i = 0; i < 5; ++i) {
      const auto t0 = Clock::now();
      const auto r = lister.client->request("GET", kCms, "", lister.headers, 60s);
      full.push_back(ms_since(t0));
      bytes = r.body.size();
      rv = json::parse(r.body)["metadata"]["resourceVersion"];
    }
    std::vector<double> paged;
    int pages = 0;
    for (int i = 0; i < 3; ++i) {
      const auto t0 = Clock::now();
      std::string next_token;
      pages = 0;
      do {
        const auto r = lister.client->request(
            "GET", kCms + "?limit=500" + (next_token.empty() ? "" : "&continue=" + next_token), "",
            lister.headers, 60s);
        next_token = json::parse(r.body)["metadata"].value("continue", "");
        ++pages;
      } while (!next_token.empty());
      paged.push_back(ms_since(t0));
    }
    std::vector<double> selected;
    std::size_t selected_items = 0;
    for (int i = 0; i < 5; ++i) {
      const auto t0 = Clock::now();
      const auto r =
          lister.client->request("GET", kCms + "?labelSelector=shard%3D7", "", lister.headers, 60s);
      selected.push_back(ms_since(t0));
      selected_items = json::parse(r.body)["items"].size();
    }
    std::printf("list all (%.1f MiB JSON): median %.0f ms of 5\n",
                static_cast<double>(bytes) / (1 << 20), percentile(full, 50));
    std::printf("list in pages of 500 (%d pages): median %.0f ms of 3 for all pages\n", pages,
                percentile(paged, 50));
    std::printf("list with labelSelector shard=7 (%zu items): median %.1f ms of 5\n",
                selected_items, percentile(selected, 50));
    std::printf("after the lists: %s\n", api.memory().c_str());
  }

  // Watches from the current version; each thread records when each write's event arrives.
  std::vector<std::vector<Clock::time_point>> received(static_cast<std::size_t>(watches),
                                                       std::vector<Clock::time_point>(writes));
  std::vector<Clock::time_point> sent(static_cast<std::size_t>(writes));
  std::atomic<int> ready{0}, watch_failures{0};
  std::vector<std::thread> watchers;
  for (int w = 0; w < watches; ++w) {
    watchers.emplace_back([&, w] {
      try {
        Connection c = connect(api);
        c.client->write_raw("GET " + kCms + "?watch=1&resourceVersion=" + rv +
                            " HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + api.token +
                            "\r\n\r\n");
        ++ready;
        std::string seen;
        int got = 0;
        while (got < writes) {
          if (!c.client->read_stream_raw_until("\"fanout\":\"" + std::to_string(got) + "\"", 30s))
            throw std::runtime_error("timed out");
          // read_stream_raw_until returns once the marker for `got` has arrived.
          received[static_cast<std::size_t>(w)][static_cast<std::size_t>(got)] = Clock::now();
          ++got;
        }
      } catch (const std::exception&) {
        ++watch_failures;
      }
    });
  }
  const auto wait_start = Clock::now();
  while (ready < watches && Clock::now() - wait_start < 30s) std::this_thread::sleep_for(10ms);
  // Give the server time to register the last watch requests before the first write (a
  // watch registered after a write would still get it: it watches from `rv`).
  std::this_thread::sleep_for(500ms);
  std::printf("%d watches open; %s\n", ready.load(), api.memory().c_str());

  Connection writer = connect(api);
  for (int k = 0; k < writes; ++k) {
    json patch = {{"metadata", {{"annotations", {{"fanout", std::to_string(k)}}}}}};
    auto headers = writer.headers;
    headers[1] = {"Content-Type", "application/merge-patch+json"};
    sent[static_cast<std::size_t>(k)] = Clock::now();
    writer.client->request("PATCH", kCms + "/object-" + std::to_string(k), patch.dump(), headers);
    std::this_thread::sleep_for(50ms);  // pacing: one write's fan-out at a time
  }
  for (auto& t : watchers) t.join();
  std::vector<double> latencies;
  for (int w = 0; w < watches; ++w)
    for (int k = 0; k < writes; ++k) {
      const auto r = received[static_cast<std::size_t>(w)][static_cast<std::size_t>(k)];
      if (r != Clock::time_point{})
        latencies.push_back(
            std::chrono::duration<double, std::milli>(r - sent[static_cast<std::size_t>(k)])
                .count());
    }
  std::printf(
      "fan-out of one write to %d watches (%zu samples, %d watches failed): "
      "p50 %.2f ms  p99 %.2f ms  max %.2f ms\n",
      watches, latencies.size(), watch_failures.load(), percentile(latencies, 50),
      percentile(latencies, 99), percentile(latencies, 100));
  std::printf("at end: %s\n", api.memory().c_str());
  return watch_failures.load() == 0 ? 0 : 1;
}
