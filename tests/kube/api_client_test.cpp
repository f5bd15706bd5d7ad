// The HTTP client against the simulated API server over real TLS: get, paged lists,
// Status errors, trust, client certificates from memory, watches and their cancellation.
#include "kube/api_client.h"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <vector>

#include "server/pki.h"
#include "sim/api_server.h"
#include "tests/kube/kube_test_support.h"

namespace commgate::kube {
namespace COMMGATE_TEST_UNIT {

using nlohmann::json;
using testing::client_for;
using testing::config_for;
using testing::configmap;
using testing::configmaps;
using testing::kConfigMaps;
using testing::wait_until;

class ApiClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    api_.start();
    client_ = client_for(api_);
  }
  sim::ApiServer api_;
  std::unique_ptr<ApiClient> client_;
};

// Collects a watch's events and its end, from cpprestsdk threads.
struct Recorder {
  std::mutex mu;
  std::vector<WatchEvent> events;
  std::atomic<bool> ended{false};
  std::exception_ptr error;

  std::function<void(WatchEvent)> on_event() {
    return [this](WatchEvent e) {
      std::lock_guard lock(mu);
      events.push_back(std::move(e));
    };
  }
  std::function<void(std::exception_ptr)> on_end() {
    return [this](std::exception_ptr e) {
      {
        std::lock_guard lock(mu);
        error = e;
      }
      ended = true;
    };
  }
  size_t count() {
    std::lock_guard lock(mu);
    return events.size();
  }
};

TEST_F(ApiClientTest, GetsAnObject) {
  api_.store().create(configmaps(api_), "default", configmap("one", "1"));
  json cm = client_->get(std::string(kConfigMaps) + "/one");
  EXPECT_EQ(cm["data"]["k"], "1");
  EXPECT_FALSE(cm["metadata"]["resourceVersion"].get<std::string>().empty());
}

TEST_F(ApiClientTest, NotFoundIsAnApiErrorWithTheStatusReason) {
  try {
    client_->get(std::string(kConfigMaps) + "/missing");
    FAIL() << "found";
  } catch (const ApiError& e) {
    EXPECT_TRUE(e.not_found());
    EXPECT_EQ(e.reason(), "NotFound");
    EXPECT_NE(e.message().find("missing"), std::string::npos) << e.message();
    EXPECT_NE(std::string(e.what()).find("GET /api/v1/namespaces/default/configmaps/missing: 404"),
              std::string::npos)
        << e.what();
  }
}

TEST_F(ApiClientTest, ListsInPagesWithKindsFilledIn) {
  for (int i = 0; i < 5; ++i)
    api_.store().create(configmaps(api_), "default", configmap("cm" + std::to_string(i), "v"));
  std::vector<std::string> names;
  ListOptions options;
  options.limit = 2;
  int pages = 0;
  std::string version;
  do {
    ListPage page = client_->list(kConfigMaps, options);
    ++pages;
    EXPECT_LE(page.items.size(), 2u);
    for (const auto& item : page.items) {
      names.push_back(item["metadata"]["name"]);
      EXPECT_EQ(item["kind"], "ConfigMap");
      EXPECT_EQ(item["apiVersion"], "v1");
    }
    version = page.resource_version;
    options.continue_token = page.continue_token;
  } while (!options.continue_token.empty());
  EXPECT_EQ(pages, 3);
  EXPECT_EQ(names, (std::vector<std::string>{"cm0", "cm1", "cm2", "cm3", "cm4"}));
  EXPECT_EQ(version, std::to_string(api_.store().resource_version()));
}

TEST_F(ApiClientTest, ListsWithALabelSelector) {
  json a = configmap("a", "v"), b = configmap("b", "v");
  a["metadata"]["labels"] = {{"tier", "gold"}};
  b["metadata"]["labels"] = {{"tier", "tin"}};
  api_.store().create(configmaps(api_), "default", a);
  api_.store().create(configmaps(api_), "default", b);
  ListOptions options;
  options.label_selector = "tier in (gold,silver)";
  ListPage page = client_->list(kConfigMaps, options);
  ASSERT_EQ(page.items.size(), 1u);
  EXPECT_EQ(page.items[0]["metadata"]["name"], "a");
}

TEST_F(ApiClientTest, AWrongTokenIsAClear401) {
  ClusterConfig config = config_for(api_);
  config.token = BearerToken::fixed("wrong");
  ApiClient wrong(config);
  try {
    wrong.get("/api/v1/namespaces");
    FAIL() << "accepted a wrong token";
  } catch (const ApiError& e) {
    EXPECT_TRUE(e.unauthorized());
    EXPECT_EQ(e.reason(), "Unauthorized");
    EXPECT_NE(std::string(e.what()).find("GET /api/v1/namespaces: 401 Unauthorized"),
              std::string::npos)
        << e.what();
  }
}

TEST_F(ApiClientTest, TrustsOnlyTheKubeconfigsCa) {
  sim::ApiServer other;
  other.start();
  ClusterConfig config = config_for(api_);
  config.ca_pem = other.ca_pem();  // a CA that did not sign this server's certificate
  ApiClient untrusting(config);
  try {
    untrusting.get("/api/v1/namespaces");
    FAIL() << "talked to a server its CA did not sign";
  } catch (const ApiError& e) {
    FAIL() << "got an answer: " << e.what();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("GET /api/v1/namespaces"), std::string::npos) << e.what();
  }
}

TEST_F(ApiClientTest, LoadsAClientCertificateFromMemoryAndRefusesABadKey) {
  server::CertificateAuthority ca("client-ca", 1, std::chrono::hours(1));
  const auto pair = ca.issue_serving_cert("commgate", 2, std::chrono::hours(1));
  ClusterConfig config = config_for(api_);
  config.client_cert_pem = pair.cert_pem;
  config.client_key_pem = pair.key_pem;
  ApiClient with_cert(config);
  EXPECT_TRUE(with_cert.get("/api/v1/namespaces")["items"].is_array());

  config.client_key_pem = "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n";
  try {
    ApiClient bad(config);
    FAIL() << "accepted a bad key";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("does not load"), std::string::npos) << e.what();
  }
}

TEST_F(ApiClientTest, WatchDeliversEventsInOrderAndEndsOnTimeoutSeconds) {
  const auto cms = configmaps(api_);
  api_.store().create(cms, "default", configmap("before", "1"));
  const std::string from = std::to_string(api_.store().resource_version());
  Recorder r;
  WatchOptions options;
  options.resource_version = from;
  options.timeout_seconds = 1;
  WatchHandle handle = client_->watch(kConfigMaps, options, r.on_event(), r.on_end());
  api_.store().create(cms, "default", configmap("a", "1"));
  json a = configmap("a", "2");
  api_.store().update(cms, "default", "a", a, sim::WritePart::kMain);
  api_.store().remove(cms, "default", "a");
  ASSERT_TRUE(wait_until([&] { return r.ended.load(); }, std::chrono::seconds(10)));
  EXPECT_EQ(r.error, nullptr) << "ended by the server, not an error";
  std::lock_guard lock(r.mu);
  std::vector<std::string> types;
  for (const auto& e : r.events)
    if (e.type != "BOOKMARK")
      types.push_back(e.type + " " + e.object["metadata"]["name"].get<std::string>());
  EXPECT_EQ(types, (std::vector<std::string>{"ADDED a", "MODIFIED a", "DELETED a"}));
  EXPECT_TRUE(handle.finished());
}

TEST(ApiClientHistory, AWatchFromACompactedVersionGetsA410ErrorEvent) {
  sim::ApiServerOptions options;
  options.history_limit = 2;
  sim::ApiServer api(options);
  api.start();
  for (const char* n : {"a", "b", "c", "d"})
    api.store().create(configmaps(api), "default", configmap(n, "x"));
  auto client = client_for(api);
  Recorder r;
  WatchOptions watch;
  watch.resource_version = "1";
  WatchHandle handle = client->watch(kConfigMaps, watch, r.on_event(), r.on_end());
  ASSERT_TRUE(wait_until([&] { return r.count() > 0; }));
  std::lock_guard lock(r.mu);
  ASSERT_EQ(r.events[0].type, "ERROR");
  const ApiError e = ApiError::from_status(r.events[0].object, "watch");
  EXPECT_TRUE(e.expired()) << e.what();
  EXPECT_EQ(e.code(), 410);
}

TEST_F(ApiClientTest, CancellingAWatchClosesItPromptly) {
  Recorder r;
  WatchOptions options;
  options.timeout_seconds = 300;
  WatchHandle handle = client_->watch(kConfigMaps, options, r.on_event(), r.on_end());
  ASSERT_TRUE(wait_until([&] { return api_.open_watches() == 1; }));
  const auto start = std::chrono::steady_clock::now();
  handle.cancel();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  EXPECT_TRUE(r.ended.load()) << "on_end ran before cancel() returned";
  EXPECT_NE(r.error, nullptr) << "a cancelled watch ends with an error";
  EXPECT_TRUE(wait_until([&] { return api_.open_watches() == 0; }))
      << "the server saw the connection close";
}

TEST_F(ApiClientTest, AWatchTimeoutAboveTheClientsLimitIsRefused) {
  WatchOptions options;
  options.timeout_seconds = 3600;
  EXPECT_THROW(client_->watch(
                   kConfigMaps, options, [](WatchEvent) {}, [](std::exception_ptr) {}),
               std::invalid_argument);
}

}  // namespace
}  // namespace commgate::kube
