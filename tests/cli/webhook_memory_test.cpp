// Issue #19 item 8: the real `commgate webhook` (files mode, --memory-limit 256Mi as the
// chart's limit) under the memory attacks a security review reproduced, its RSS sampled
// from /proc every 5 ms: an endless chunk extension, 60 connections each holding a 7 MiB
// body one byte short, four parallel 2.8 MB reviews, and 1,000 idle TLS connections.
// Each must leave the RSS well under 256 MiB, legitimate reviews keep being answered
// during the held bodies (their latencies are printed, not asserted: docs/benchmarks.md
// "Webhook memory under attack" has the figures), and the memory of the large reviews
// returns once they are answered. Under the sanitizers (their shadow memory is most of
// the RSS) only the behaviour is checked.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/yaml_json.h"
#include "tests/server/test_client.h"
#include "tests/server/test_pki.h"
#include "tests/support/child_process.h"
#include "tests/support/sanitizers.h"
#include "tests/support/wait.h"
#include "tests/webhook/webhook_test_support.h"

namespace commgate {
namespace COMMGATE_TEST_UNIT {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using nlohmann::json;
using server::testing::Client;
using server::testing::TestPki;
using testing::ChildProcess;

constexpr double kMiB = 1024.0 * 1024.0;
// The chart's webhook memory limit, and what every attack must stay under.
constexpr double kLimitMiB = 256;
constexpr double kCeilingMiB = 192;

// The value of an unlabelled sample in a /metrics text; -1 when absent.
double sample_of(const std::string& metrics, const std::string& name) {
  const auto at = metrics.find("\n" + name + " ");
  return at == std::string::npos ? -1.0 : std::stod(metrics.substr(at + name.size() + 2));
}

double rss_mib(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
  return 0;
}

// Samples a process's RSS every 5 ms while it lives; peak() since the last reset().
class RssSampler {
 public:
  explicit RssSampler(pid_t pid) : pid_(pid), thread_([this] { run(); }) {}
  ~RssSampler() {
    stop_ = true;
    thread_.join();
  }
  void reset() { peak_ = rss_mib(pid_); }
  double peak() const { return peak_.load(); }

 private:
  void run() {
    while (!stop_) {
      const double now = rss_mib(pid_);
      double seen = peak_.load();
      while (now > seen && !peak_.compare_exchange_weak(seen, now)) {
      }
      std::this_thread::sleep_for(5ms);
    }
  }
  pid_t pid_;
  std::atomic<bool> stop_{false};
  std::atomic<double> peak_{0};
  std::thread thread_;
};

json job_of_bytes(std::size_t bytes) {
  std::ifstream in(std::string(COMMGATE_SOURCE_DIR) + "/examples/jobs/bert-large-350m.yaml");
  std::stringstream text;
  text << in.rdbuf();
  json job = yaml_documents_to_json(text.str()).at(0);
  json env = json::array();
  for (std::size_t i = 0, size = 2; size < bytes; ++i) {
    json entry = {{"name", "PAD_" + std::to_string(i)}, {"value", std::string(100, 'p')}};
    size += entry.dump().size() + 1;
    env.push_back(std::move(entry));
  }
  job["spec"]["template"]["spec"]["containers"][0]["env"] = env;
  return job;
}

std::string percentile(std::vector<double> ms, double p) {
  if (ms.empty()) return "-";
  std::sort(ms.begin(), ms.end());
  char out[32];
  std::snprintf(out, sizeof out, "%.1f ms",
                ms[std::min(ms.size() - 1, static_cast<std::size_t>(p * (ms.size() - 1)))]);
  return out;
}

class WebhookMemory : public ::testing::Test {
 protected:
  // The webhook's policies, and its flags beyond the TLS, address and memory ones.
  virtual std::vector<std::string> policy_args() const {
    return {"--policy-dir", std::string(COMMGATE_SOURCE_DIR) + "/examples/policies"};
  }
  void SetUp() override {
    pki_.issue_server_cert(1);
    std::vector<std::string> argv = {COMMGATE_BIN,
                                     "webhook",
                                     "--tls-cert-file",
                                     pki_.cert_file(),
                                     "--tls-private-key-file",
                                     pki_.key_file(),
                                     "--address",
                                     "127.0.0.1",
                                     "--port",
                                     "0",
                                     "--memory-limit",
                                     "256Mi"};
    for (const auto& a : policy_args()) argv.push_back(a);
    webhook_ = std::make_unique<ChildProcess>(argv, pki_.dir() / "webhook.log");
    port_ = webhook_->wait_for_port(std::regex("listening on 127\\.0\\.0\\.1:([0-9]+)"));
    ASSERT_NE(port_, 0) << webhook_->output();
    sampler_ = std::make_unique<RssSampler>(webhook_->pid());
    small_review_ = webhook::testing::a_create_of(job_of_bytes(0)).body();
    ASSERT_EQ(mutate(small_review_), 200);
  }
  void TearDown() override {
    sampler_.reset();
    if (webhook_) {
      EXPECT_EQ(webhook_->terminate(), 0) << webhook_->output();
    }
  }

  std::unique_ptr<Client> client() {
    auto c = std::make_unique<Client>(port_, pki_.ca_file());
    EXPECT_EQ(c->connect(), "");
    return c;
  }
  // The answer, or nullopt (with the reason printed) when none came in time: the
  // sanitizers' slowdown on a busy machine made 4 parallel 2.8 MB reviews outlast the
  // client's 5 s, and an exception on a sender thread would abort the whole program.
  std::optional<server::testing::Reply> post(const std::string& path, const std::string& body) {
    const auto timeout = std::chrono::milliseconds(COMMGATE_UNDER_SANITIZER ? 60'000 : 5'000);
    try {
      return client()->request("POST", path, body, {{"Content-Type", "application/json"}}, timeout);
    } catch (const std::exception& e) {
      std::printf("[ memory ] no answer: %s\n", e.what());
      return std::nullopt;
    }
  }
  // The answer's status; 0 when none came in time.
  int mutate(const std::string& body) {
    const auto reply = post("/mutate", body);
    return reply ? reply->status : 0;
  }
  // Peak RSS of the attack, printed and (outside the sanitizers) held under the ceiling.
  void report(const char* attack) {
    const double peak = sampler_->peak();
    std::printf("[ memory ] %-52s peak RSS %6.1f MiB (limit %.0f MiB)\n", attack, peak, kLimitMiB);
    if (!COMMGATE_UNDER_SANITIZER) {
      EXPECT_LT(peak, kCeilingMiB) << attack;
    }
  }

  TestPki pki_;
  std::unique_ptr<ChildProcess> webhook_;
  std::unique_ptr<RssSampler> sampler_;
  uint16_t port_ = 0;
  std::string small_review_;
};

TEST_F(WebhookMemory, an_endless_chunk_extension_is_cut_off) {
  sampler_->reset();
  auto c = client();
  ASSERT_TRUE(
      c->write_raw("POST /mutate HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n1;x="));
  const std::string piece(64 * 1024, 'a');
  for (int i = 0; i < 1024 && c->write_raw(piece, 2000ms); ++i) {
  }
  EXPECT_TRUE(c->read_raw_until_closed(3s).starts_with("HTTP/1.1 400"));
  report("one endless chunk extension (up to 64 MiB sent)");
  EXPECT_EQ(mutate(small_review_), 200);
}

TEST_F(WebhookMemory, held_bodies_are_bounded_and_reviews_keep_being_answered) {
  sampler_->reset();
  constexpr std::size_t kBody = 7 * 1024 * 1024;
  const std::string head =
      "POST /mutate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
      "Content-Length: " +
      std::to_string(kBody) + "\r\n\r\n";
  const std::string chunk(1024 * 1024, ' ');
  // Each connection sends a 7 MiB body but its last byte (one refused at its head gets a
  // 503 and its writes go nowhere). Nothing is read back: the test client closes a socket
  // whose read times out, which would free the webhook's budget.
  std::vector<std::unique_ptr<Client>> held;
  for (int i = 0; i < 60; ++i) {
    auto c = client();
    bool open = c->write_raw(head);
    for (std::size_t sent = 0; open && sent + chunk.size() < kBody; sent += chunk.size())
      open = c->write_raw(chunk, 2000ms);
    if (open) c->write_raw(std::string(chunk.size() - 1, ' '), 2000ms);
    held.push_back(std::move(c));
  }
  std::this_thread::sleep_for(200ms);  // the last bodies read
  const std::string metrics = client()->request("GET", "/metrics").body;
  auto metric = [&](const std::string& name) { return sample_of(metrics, name); };
  const double refused = metric("commgate_webhook_http_requests_refused_busy_total");
  const double inflight = metric("commgate_webhook_http_inflight_body_bytes");
  std::vector<double> latencies;
  int answered = 0;
  for (int i = 0; i < 50; ++i) {
    const auto start = std::chrono::steady_clock::now();
    answered += mutate(small_review_) == 200;
    latencies.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
            .count());
  }
  EXPECT_EQ(answered, 50) << "a review was not answered while bodies were held";
  // The body budget (64 MiB of 256Mi) admits 9 bodies of 7 MiB at once.
  EXPECT_EQ(refused, 51) << metrics;
  EXPECT_EQ(inflight, 9.0 * kBody) << metrics;
  report("60 connections each holding a 7 MiB body");
  std::printf("[ memory ] reviews during it: p50 %s, p99 %s (%.0f of 60 held bodies refused 503)\n",
              percentile(latencies, 0.5).c_str(), percentile(latencies, 0.99).c_str(), refused);
}

TEST_F(WebhookMemory, large_reviews_in_parallel_give_their_memory_back) {
  const double before = rss_mib(webhook_->pid());
  sampler_->reset();
  const std::string big = webhook::testing::a_create_of(job_of_bytes(2'800'000)).body();
  for (int round = 0; round < 3; ++round) {
    std::vector<std::thread> senders;
    std::atomic<int> ok{0};
    for (int i = 0; i < 4; ++i) senders.emplace_back([&] { ok += mutate(big) == 200; });
    for (auto& t : senders) t.join();
    EXPECT_EQ(ok.load(), 4);
  }
  report("4 parallel reviews of 2.8 MB, 3 rounds");
  double after = 0;
  const bool returned = testing::wait_until(
      [&] {
        after = rss_mib(webhook_->pid());
        return after < before + 32;
      },
      5s);
  std::printf("[ memory ] RSS before %.1f MiB, after the large reviews %.1f MiB\n", before, after);
  if (!COMMGATE_UNDER_SANITIZER) {
    EXPECT_TRUE(returned) << before << " -> " << after << " MiB";
  }
}

// The workload gate reads every pod's command line (issue #19 item 4); a review found a
// copy per word there: two 2.9 MB pods of `sh -c "a a a ..."` took the webhook past 256Mi.
class WebhookMemoryGate : public WebhookMemory {
 protected:
  std::vector<std::string> policy_args() const override {
    return {"--policy-dir", std::string(COMMGATE_SOURCE_DIR) + "/tests/cli/testdata/workload-gate",
            "--workload-gate"};
  }
};

TEST_F(WebhookMemoryGate, pods_of_millions_of_words_in_parallel_stay_under_the_limit) {
  json pod = {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata", {{"name", "words"}, {"namespace", "nlp"}}},
      {"spec",
       {{"containers", json::array({{{"name", "c"},
                                     {"image", "i"},
                                     {"command", {"sh", "-c", std::string(2'800'000, 'a')}},
                                     {"resources", {{"limits", {{"nvidia.com/gpu", "1"}}}}}}})}}}};
  std::string& words = pod["spec"]["containers"][0]["command"][2].get_ref<std::string&>();
  for (std::size_t i = 1; i < words.size(); i += 2) words[i] = ' ';
  words += " --nnodes=4";  // the last word counts: every word was read
  const std::string body =
      webhook::testing::ReviewBuilder("request-v1-create-pod-minikube-user")
          .set("/request/resource", {{"group", ""}, {"version", "v1"}, {"resource", "pods"}})
          .set("/request/kind", {{"group", ""}, {"version", "v1"}, {"kind", "Pod"}})
          .object(pod)
          .body();
  sampler_->reset();
  for (int round = 0; round < 2; ++round) {
    std::vector<std::thread> senders;
    std::atomic<int> refused{0};
    for (int i = 0; i < 4; ++i)
      senders.emplace_back([&] {
        const auto r = post("/validate", body);
        if (!r) return;
        // Under the sanitizers a busy machine can take the decision past the webhook's 2 s
        // deadline: a denial that says so is the behaviour then, the words unread.
        const bool read_every_word = r->body.find("asks for 4 nodes") != std::string::npos;
        const bool past_deadline = COMMGATE_UNDER_SANITIZER &&
                                   r->body.find("could not decide within") != std::string::npos;
        refused += r->status == 200 && r->body.find("\"allowed\":false") != std::string::npos &&
                   (read_every_word || past_deadline);
        if (!read_every_word && !past_deadline) ADD_FAILURE() << r->body;
      });
    for (auto& t : senders) t.join();
    EXPECT_EQ(refused.load(), 4);
  }
  report("4 parallel 2.8 MB pods of 1.4M words each, 2 rounds");
}

// 256Mi / 2 / 160 KiB = 819 connections (server/container_limits.h). Past the cap each new
// idle connection closes the one that has waited longest (the attacker review of
// 2026-12-06: holding idle connections at the cap locked the API server out), so the
// server holds at most the cap, and a review still gets through.
TEST_F(WebhookMemory, idle_connections_stop_at_the_cap_the_limit_gives) {
  sampler_->reset();
  std::vector<std::unique_ptr<Client>> idle;
  for (int i = 0; i < 1000; ++i) {
    auto c = std::make_unique<Client>(port_, pki_.ca_file());
    if (c->connect(2000ms).empty()) idle.push_back(std::move(c));
  }
  const std::string metrics = client()->request("GET", "/metrics").body;
  auto metric = [&](const std::string& name) { return sample_of(metrics, name); };
  const double open = metric("commgate_webhook_http_connections_active");
  const double evicted = metric("commgate_webhook_http_connections_evicted_total");
  EXPECT_GE(open, 1) << metrics;
  EXPECT_LE(open, 819 + 2) << metrics;  // the cap, and connections being closed to make room
  EXPECT_GE(evicted, 1000 + 1 - 819 - 2) << metrics;
  report("1,000 idle TLS connections");
  std::printf("[ memory ] %.0f connections open after 1000 idle ones, %.0f evicted\n", open,
              evicted);
  EXPECT_EQ(mutate(small_review_), 200) << "with the cap full of idle connections";
  idle.clear();
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate
