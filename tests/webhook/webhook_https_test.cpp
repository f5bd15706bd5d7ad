// Integration: the real `commgate webhook` binary over HTTPS with a throwaway CA
// (tests/server/test_pki.h). Port 0; the test reads the bound port from the log line;
// conditions are polled with deadlines.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <regex>
#include <sstream>
#include <thread>

#include "tests/server/test_client.h"
#include "tests/server/test_pki.h"
#include "tests/support/child_process.h"
#include "tests/support/wait.h"
#include "tests/webhook/webhook_test_support.h"

namespace commgate::webhook {
namespace COMMGATE_TEST_UNIT {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using nlohmann::json;
using server::testing::Client;
using server::testing::TestPki;

using commgate::testing::ChildProcess;
using commgate::testing::wait_until;

const std::regex kListening("listening on [^ ]*:([0-9]+)");

// `commgate webhook ARGS...` as a child process, its output in `log`.
std::unique_ptr<ChildProcess> start_webhook(std::vector<std::string> args, const fs::path& log) {
  args.insert(args.begin(), {COMMGATE_BINARY, "webhook"});
  return std::make_unique<ChildProcess>(args, log);
}

struct TempDir {
  fs::path path = fs::temp_directory_path() / ("commgate-webhook-it-" + std::to_string(getpid()));
  TempDir() { fs::create_directories(path); }
  ~TempDir() { fs::remove_all(path); }
};

constexpr const char* kStrictPolicy = R"(apiVersion: commgate.io/v1alpha1
kind: CommPolicy
metadata: {name: strict}
spec: {maxCommShare: 0.10}
)";

// One running webhook with a strict policy and a 1 GB/s profile for pool-all.
struct Harness {
  TestPki pki;
  TempDir dir;
  std::unique_ptr<ChildProcess> process;
  uint16_t port = 0;

  Harness() {
    pki.issue_server_cert(100);
    fs::create_directories(dir.path / "policies");
    fs::create_directories(dir.path / "profiles");
    std::ofstream(dir.path / "policies" / "strict.yaml") << kStrictPolicy;
    std::ofstream(dir.path / "profiles" / "pool-all.json")
        << testing::a_profile(1.0, std::chrono::system_clock::now()).dump();
    process = start_webhook(
        {"--port", "0", "--address", "127.0.0.1", "--tls-cert-file", pki.cert_file(),
         "--tls-private-key-file", pki.key_file(), "--policy-dir", (dir.path / "policies").string(),
         "--profile-dir", (dir.path / "profiles").string()},
        dir.path / "webhook.log");
    port = process->wait_for_port(kListening);
  }
  std::unique_ptr<Client> client() {
    auto c = std::make_unique<Client>(port, pki.ca_file());
    const std::string err = c->connect();
    if (!err.empty()) throw std::runtime_error("connect: " + err);
    return c;
  }
};

const std::vector<std::pair<std::string, std::string>> kJson = {
    {"Content-Type", "application/json"}};

std::string an_8_node_job_review() {
  return testing::a_create_of(commgate::testing::a_training_job("bert")
                                  .nodes(8)
                                  .params(100e6)
                                  .step_time_hint_ms(1000)
                                  .json())
      .body();
}

TEST(WebhookHttps, downsizes_over_tls_and_stops_gracefully_on_sigterm) {
  Harness h;
  ASSERT_NE(h.port, 0) << h.process->output();
  auto c = h.client();
  EXPECT_EQ(c->request("GET", "/readyz").status, 200);
  const auto r = c->request("POST", "/mutate", an_8_node_job_review(), kJson);
  ASSERT_EQ(r.status, 200) << r.body;
  const json out = json::parse(r.body);
  EXPECT_EQ(out["response"]["uid"], "c3ce937b-1a18-4e45-a0e8-adf5c962f1e4");
  EXPECT_EQ(out["response"]["patchType"], "JSONPatch");
  // The downsize, then what would make 8 nodes pass (issue #24: four lines of advice).
  ASSERT_EQ(out["response"]["warnings"].size(), 5u);
  EXPECT_NE(out["response"]["warnings"][0].get<std::string>().find("from 8 to 6"),
            std::string::npos);
  EXPECT_EQ(out["response"]["warnings"][1].get<std::string>().rfind(
                "commgate: to run 8 nodes: The link: ", 0),
            0u);
  const auto metrics = c->request("GET", "/metrics");
  EXPECT_NE(metrics.body.find("decision=\"Downsize\""), std::string::npos);
  EXPECT_NE(metrics.body.find("commgate_webhook_http_"), std::string::npos) << "server stats";
  // Bucket bounds as Prometheus clients print them, not "0.00050000000000000001".
  EXPECT_NE(metrics.body.find("commgate_webhook_request_duration_seconds_bucket{endpoint="
                              "\"mutate\",le=\"0.0005\"}"),
            std::string::npos)
      << metrics.body;
  c->close();
  EXPECT_EQ(h.process->terminate(), 0) << h.process->output();
  EXPECT_NE(h.process->output().find("stopped"), std::string::npos);
}

TEST(WebhookHttps, refuses_bad_bodies_content_types_and_a_10mb_body) {
  Harness h;
  ASSERT_NE(h.port, 0) << h.process->output();
  EXPECT_EQ(h.client()->request("POST", "/validate", "{nope", kJson).status, 400);
  EXPECT_EQ(
      h.client()
          ->request("POST", "/validate", an_8_node_job_review(), {{"Content-Type", "text/plain"}})
          .status,
      400);
  EXPECT_EQ(h.client()->request("GET", "/validate").status, 405);
  EXPECT_EQ(
      h.client()->request("POST", "/validate", std::string(10 * 1024 * 1024, 'x'), kJson).status,
      413);
  EXPECT_EQ(h.client()->request("POST", "/validate", an_8_node_job_review(), kJson).status, 200)
      << "still serving";
}

TEST(WebhookHttps, a_slowloris_client_does_not_block_others) {
  Harness h;
  ASSERT_NE(h.port, 0) << h.process->output();
  auto attacker = h.client();
  ASSERT_TRUE(attacker->write_raw("POST /validate HTTP/1.1\r\nHost: x\r\nX-Slow: "));
  auto good = h.client();
  const auto until = Clock::now() + 1s;
  int served = 0;
  while (Clock::now() < until) {
    attacker->write_raw("a", 1s);  // one header byte per request of the good client
    const auto t0 = Clock::now();
    EXPECT_EQ(good->request("POST", "/validate", an_8_node_job_review(), kJson).status, 200);
    EXPECT_LT(Clock::now() - t0, 500ms);
    ++served;
  }
  EXPECT_GT(served, 10);
}

TEST(WebhookHttps, rotates_the_certificate_without_a_failed_request) {
  Harness h;
  ASSERT_NE(h.port, 0) << h.process->output();
  std::atomic<bool> stop{false};
  std::atomic<int> ok{0}, failed{0}, saw_new{0};
  std::mutex err_mu;
  std::string first_error;
  std::vector<std::thread> load;
  for (int t = 0; t < 2; ++t) {
    load.emplace_back([&] {
      while (!stop) {
        try {
          auto c = h.client();
          for (int i = 0; i < 5 && !stop; ++i) {
            const auto r = c->request("POST", "/validate", an_8_node_job_review(), kJson);
            if (r.status != 200) throw std::runtime_error("status " + std::to_string(r.status));
            ++ok;
          }
          if (c->peer_serial() == 200) ++saw_new;
        } catch (const std::exception& e) {
          ++failed;
          std::lock_guard lock(err_mu);
          if (first_error.empty()) first_error = e.what();
        }
      }
    });
  }
  ASSERT_TRUE(wait_until([&] { return ok > 50; }));
  h.pki.issue_server_cert(200);
  const bool rotated = wait_until([&] { return saw_new > 5; });
  stop = true;
  for (auto& t : load) t.join();
  EXPECT_TRUE(rotated) << h.process->output();
  EXPECT_EQ(failed, 0) << first_error;
}

TEST(WebhookHttps, misconfiguration_at_start_is_fatal_with_a_clear_message) {
  TestPki pki;
  pki.issue_server_cert(1);
  TempDir dir;
  {
    auto p = start_webhook({"--port", "0", "--tls-cert-file", pki.cert_file()}, dir.path / "a.log");
    EXPECT_EQ(p->wait_exit(), 2);
    EXPECT_NE(p->output().find("--tls-private-key-file"), std::string::npos) << p->output();
  }
  {
    auto p = start_webhook(
        {"--port", "0", "--address", "127.0.0.1", "--tls-cert-file", pki.cert_file(),
         "--tls-private-key-file", pki.key_file(), "--policy-dir", "/nonexistent/commgate"},
        dir.path / "b.log");
    EXPECT_EQ(p->wait_exit(), 2);
    EXPECT_NE(p->output().find("/nonexistent/commgate"), std::string::npos) << p->output();
  }
}

// Issue 12: with --policy-dir nothing said which policies the webhook had loaded. Its log
// names them at start and on every reload; with --log-format json every line is one JSON
// object a collector can read.
TEST(WebhookHttps, logs_the_policies_it_loaded_and_each_reload_as_json_lines) {
  TestPki pki;
  pki.issue_server_cert(1);
  TempDir dir;
  fs::create_directories(dir.path / "policies");
  std::ofstream(dir.path / "policies" / "strict.yaml") << kStrictPolicy;
  auto p = start_webhook({"--port", "0", "--address", "127.0.0.1", "--tls-cert-file",
                          pki.cert_file(), "--tls-private-key-file", pki.key_file(), "--policy-dir",
                          (dir.path / "policies").string(), "--log-format", "json"},
                         dir.path / "json.log");
  ASSERT_NE(p->wait_for_port(std::regex("\"port\":([0-9]+)")), 0) << p->output();
  std::ofstream(dir.path / "loose.tmp")
      << "apiVersion: commgate.io/v1alpha1\nkind: CommPolicy\nmetadata: {name: loose}\n"
         "spec: {maxCommShare: 0.5}\n";
  fs::rename(dir.path / "loose.tmp", dir.path / "policies" / "loose.yaml");  // whole, at once
  ASSERT_TRUE(wait_until([&] {
    return p->output().find("policy files reloaded") != std::string::npos;
  })) << p->output();
  EXPECT_EQ(p->terminate(), 0);

  std::vector<json> lines;
  std::istringstream output(p->output());
  for (std::string line; std::getline(output, line);) {
    ASSERT_TRUE(json::accept(line)) << "not JSON: " << line;
    lines.push_back(json::parse(line));
  }
  const auto said = [&](const std::string& msg) {
    for (const json& l : lines)
      if (l.value("msg", "") == msg) return l;
    return json();
  };
  const json loaded = said("policy files loaded");
  ASSERT_TRUE(loaded.is_object()) << p->output();
  EXPECT_EQ(loaded["level"], "info");
  EXPECT_EQ(loaded["policies"], 1);
  EXPECT_EQ(loaded["policyNames"], "strict");
  EXPECT_EQ(loaded["profiles"], 0);
  const json reloaded = said("policy files reloaded");
  EXPECT_EQ(reloaded["policies"], 2) << reloaded;
  EXPECT_EQ(reloaded["policyNames"], "loose,strict") << reloaded;
}

}  // namespace
}  // namespace commgate::webhook
