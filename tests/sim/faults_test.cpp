// Fault injection in the simulated API server, through the library calls and through the
// binary's `POST /sim/faults`: what client tests (the watcher, the operator) rely on.
#include "sim/faults.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <thread>

#include "sim/api_server.h"
#include "tests/server/test_client.h"

namespace commgate::sim {
namespace COMMGATE_TEST_UNIT {

using nlohmann::json;
using server::testing::Client;
using server::testing::Reply;
using namespace std::chrono_literals;

const char* kCms = "/api/v1/namespaces/default/configmaps";

json configmap(const std::string& name) {
  return {{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"metadata", {{"name", name}}}};
}

class FaultsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    api_.start();
    client_ = connect();
  }
  std::unique_ptr<Client> connect() {
    auto c = std::make_unique<Client>(api_.port(), api_.pki_dir() + "/ca.crt");
    EXPECT_EQ(c->connect(), "");
    return c;
  }
  std::vector<std::pair<std::string, std::string>> auth() const {
    return {{"Authorization", "Bearer " + api_.token()}, {"Content-Type", "application/json"}};
  }
  Reply call(const std::string& method, const std::string& target, const std::string& body = "") {
    return client_->request(method, target, body, auth());
  }
  // Starts a watch on its own connection and waits until the server has registered it.
  std::unique_ptr<Client> start_watch(const std::string& query) {
    auto w = connect();
    const std::size_t before = api_.open_watches();
    w->write_raw(std::string("GET ") + kCms + "?watch=1" + query +
                 " HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + api_.token() + "\r\n\r\n");
    const auto deadline = std::chrono::steady_clock::now() + 5s;
    while (api_.open_watches() == before && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(5ms);
    EXPECT_GT(api_.open_watches(), before);
    return w;
  }
  std::string current_rv() {
    return json::parse(call("GET", kCms).body)["metadata"]["resourceVersion"];
  }

  ApiServer api_;
  std::unique_ptr<Client> client_;
};

TEST_F(FaultsTest, the_next_requests_fail_with_429_and_retry_after_then_recover) {
  api_.fail_next_requests(2, 429, 3s);
  for (int i = 0; i < 2; ++i) {
    const Reply r = call("GET", kCms);
    ASSERT_EQ(r.status, 429);
    EXPECT_EQ(r.header("Retry-After"), "3");
    const json status = json::parse(r.body);
    EXPECT_EQ(status["reason"], "TooManyRequests");
    EXPECT_EQ(status["details"]["retryAfterSeconds"], 3);
  }
  EXPECT_EQ(call("GET", kCms).status, 200);
  EXPECT_EQ(api_.injected_failures(), 2u);
}

TEST_F(FaultsTest, a_500_can_target_only_paths_containing_a_string) {
  api_.fail_next_requests(1, 500, 1s, "/configmaps");
  EXPECT_EQ(call("GET", "/api/v1/namespaces").status, 200);  // not matched: still armed
  const Reply r = call("GET", kCms);
  EXPECT_EQ(r.status, 500);
  EXPECT_EQ(json::parse(r.body)["reason"], "InternalError");
  EXPECT_EQ(call("GET", kCms).status, 200);
}

TEST_F(FaultsTest, closing_watches_ends_their_streams_cleanly) {
  auto w1 = start_watch("&timeoutSeconds=600");
  auto w2 = start_watch("&timeoutSeconds=600");
  api_.close_all_watches();
  EXPECT_EQ(api_.open_watches(), 0u);
  // The last chunk arrives and the server closes: a clean end, well before the timeout.
  EXPECT_NE(w1->read_raw_until_closed(5s).find("\r\n0\r\n\r\n"), std::string::npos);
  EXPECT_NE(w2->read_raw_until_closed(5s).find("\r\n0\r\n\r\n"), std::string::npos);
}

TEST_F(FaultsTest, after_compaction_a_watch_from_an_older_version_gets_410) {
  ASSERT_EQ(call("POST", kCms, configmap("a").dump()).status, 201);
  const std::string old_rv = current_rv();
  ASSERT_EQ(call("POST", kCms, configmap("b").dump()).status, 201);
  api_.compact_history();
  auto expired = connect();
  expired->write_raw(std::string("GET ") + kCms + "?watch=1&resourceVersion=" + old_rv +
                     " HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + api_.token() + "\r\n\r\n");
  const std::string raw = expired->read_raw_until_closed(5s);
  EXPECT_NE(raw.find(R"("code":410)"), std::string::npos) << raw;
  // From the current version nothing was lost, so that watch is accepted.
  auto current = start_watch("&resourceVersion=" + current_rv() + "&timeoutSeconds=600");
  EXPECT_EQ(api_.open_watches(), 1u);
}

TEST_F(FaultsTest, restart_keeps_the_port_and_objects_and_with_history_old_watches_resume) {
  ASSERT_EQ(call("POST", kCms, configmap("a").dump()).status, 201);
  const std::string rv = current_rv();
  ASSERT_EQ(call("POST", kCms, configmap("b").dump()).status, 201);
  const uint16_t port = api_.port();
  auto w = start_watch("&timeoutSeconds=600");
  api_.restart(/*keep_history=*/true);
  EXPECT_EQ(api_.port(), port);
  EXPECT_EQ(api_.open_watches(), 0u);
  EXPECT_TRUE(w->closed_by_server(5s));
  client_ = connect();
  EXPECT_EQ(json::parse(call("GET", kCms).body)["items"].size(), 2u);
  // Resuming from before "b" replays it.
  auto again = connect();
  again->write_raw(std::string("GET ") + kCms + "?watch=1&timeoutSeconds=1&resourceVersion=" + rv +
                   " HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + api_.token() + "\r\n\r\n");
  const std::string raw = again->read_raw_until_closed(5s);
  EXPECT_NE(raw.find(R"("type":"ADDED")"), std::string::npos) << raw;
  EXPECT_NE(raw.find(R"("name":"b")"), std::string::npos) << raw;
}

TEST_F(FaultsTest, restart_without_history_forces_a_relist) {
  ASSERT_EQ(call("POST", kCms, configmap("a").dump()).status, 201);
  const std::string rv = current_rv();
  ASSERT_EQ(call("POST", kCms, configmap("b").dump()).status, 201);
  api_.restart(/*keep_history=*/false);
  client_ = connect();
  auto w = connect();
  w->write_raw(std::string("GET ") + kCms + "?watch=1&resourceVersion=" + rv +
               " HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + api_.token() + "\r\n\r\n");
  EXPECT_NE(w->read_raw_until_closed(5s).find(R"("reason":"Expired")"), std::string::npos);
}

TEST_F(FaultsTest, responses_can_be_delayed) {
  api_.set_response_delay(300ms);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(call("GET", kCms).status, 200);
  EXPECT_GE(std::chrono::steady_clock::now() - start, 300ms);  // a lower bound only
  api_.set_response_delay(0ms);
}

TEST_F(FaultsTest, the_admin_endpoint_arms_faults_and_refuses_bad_requests) {
  EXPECT_EQ(client_->request("POST", "/sim/faults", R"({"closeWatches":true})").status, 401);
  EXPECT_EQ(call("POST", "/sim/faults", "not json").status, 400);
  const Reply bad_code = call("POST", "/sim/faults", R"({"failNext":{"code":404}})");
  EXPECT_EQ(bad_code.status, 400);
  EXPECT_NE(bad_code.body.find("failNext.code"), std::string::npos);
  EXPECT_EQ(call("POST", "/sim/faults", R"({"delayMs":"x"})").status, 400);

  ASSERT_EQ(call("POST", "/sim/faults", R"({"failNext":{"count":1,"code":503}})").status, 200);
  EXPECT_EQ(call("GET", kCms).status, 503);
  EXPECT_EQ(call("GET", kCms).status, 200);
}

TEST_F(FaultsTest, the_admin_endpoint_restarts_after_replying) {
  ASSERT_EQ(call("POST", kCms, configmap("a").dump()).status, 201);
  const std::string rv = current_rv();
  ASSERT_EQ(call("POST", kCms, configmap("b").dump()).status, 201);
  ASSERT_EQ(call("POST", "/sim/faults", R"({"restart":{"keepHistory":false}})").status, 200);
  EXPECT_TRUE(client_->closed_by_server(5s));
  // Serving again on the same port with the same objects, and the history gone.
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  Reply r;
  while (std::chrono::steady_clock::now() < deadline) {
    auto c = std::make_unique<Client>(api_.port(), api_.pki_dir() + "/ca.crt");
    if (c->connect() != "") {
      std::this_thread::sleep_for(20ms);
      continue;
    }
    client_ = std::move(c);
    r = call("GET", kCms);
    break;
  }
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(json::parse(r.body)["items"].size(), 2u);
  auto w = connect();
  w->write_raw(std::string("GET ") + kCms + "?watch=1&resourceVersion=" + rv +
               " HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + api_.token() + "\r\n\r\n");
  EXPECT_NE(w->read_raw_until_closed(5s).find(R"("code":410)"), std::string::npos);
}

// The audit log: each API request with its verb, user, objectRef and code, injected faults
// and 401s included, as `GET /sim/audit` serves it (audit.k8s.io/v1 EventList).
TEST_F(FaultsTest, the_audit_log_records_each_request_with_its_user_and_code) {
  ASSERT_EQ(call("POST", kCms, configmap("a").dump()).status, 201);
  json generated = configmap("");
  generated["metadata"] = {{"generateName", "gen-"}};
  const Reply created = call("POST", kCms, generated.dump());
  ASSERT_EQ(created.status, 201);
  const std::string generated_name = json::parse(created.body)["metadata"]["name"];
  api_.fail_next_requests(1, 500, 1s, "/configmaps/a");
  EXPECT_EQ(call("GET", std::string(kCms) + "/a").status, 500);
  EXPECT_EQ(call("DELETE", std::string(kCms) + "/a").status, 200);
  EXPECT_EQ(client_->request("GET", kCms, "", {}).status, 401);
  EXPECT_EQ(call("GET", "/sim/audit?x").status, 200) << "the admin endpoint is not audited";
  EXPECT_EQ(client_->request("GET", "/sim/audit", "", {}).status, 401);

  const Reply audit = call("GET", "/sim/audit");
  ASSERT_EQ(audit.status, 200);
  const json list = json::parse(audit.body);
  EXPECT_EQ(list["apiVersion"], "audit.k8s.io/v1");
  EXPECT_EQ(list["kind"], "EventList");
  std::vector<std::string> lines;
  for (const json& e : list["items"]) {
    EXPECT_EQ(e["level"], "Metadata");
    EXPECT_EQ(e["requestReceivedTimestamp"].get<std::string>().size(), 27u)
        << "MicroTime: " << e["requestReceivedTimestamp"];
    lines.push_back(e["verb"].get<std::string>() + " " +
                    e.value("objectRef", json::object()).value("name", "") + " " +
                    e["user"].value("username", "") + " " +
                    std::to_string(e["responseStatus"]["code"].get<int>()));
  }
  const std::vector<std::string> want = {
      "create a kubernetes-admin 201", "create " + generated_name + " kubernetes-admin 201",
      "get a kubernetes-admin 500", "delete a kubernetes-admin 200", "list   401"};
  EXPECT_EQ(lines, want);
  const json& first = list["items"][0];
  EXPECT_EQ(first["objectRef"], json({{"resource", "configmaps"},
                                      {"namespace", "default"},
                                      {"name", "a"},
                                      {"apiVersion", "v1"}}));
  EXPECT_EQ(first["requestURI"], kCms);
  EXPECT_EQ(api_.audit_events().size(), want.size());
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::sim
