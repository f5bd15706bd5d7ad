// Admission webhooks in the simulated API server, against a small webhook server built on
// the project's HTTPS server (server) with a certificate for hooks.testing.svc from a
// throwaway CA: which requests go to which webhook, what they are sent, and what their
// answers do to the request (patch, warnings, refusal, failure, timeout, dry run).
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "core/base64.h"
#include "core/yaml_json.h"
#include "server/pki.h"
#include "server/server.h"
#include "sim/api_server.h"
#include "sim/kubeconfig.h"
#include "tests/server/test_client.h"

namespace commgate::sim {
namespace COMMGATE_TEST_UNIT {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace std::chrono_literals;
using server::testing::Client;
using server::testing::Reply;

constexpr const char* kTj = "/apis/commgate.io/v1alpha1/namespaces/nlp/trainingjobs";
constexpr const char* kOperator = "system:serviceaccount:commgate-system:commgate-operator";

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A webhook server whose answer depends on the path: /allow, /deny, /deny-bare, /patch,
// /warn, /slow, /wrong-uid. It keeps every AdmissionReview it receives, with the target.
class TestWebhook {
 public:
  explicit TestWebhook(const server::CertificateAuthority& ca) {
    dir_ = fs::temp_directory_path() /
           ("commgate-admission-" + std::to_string(getpid()) + "-" + std::to_string(++instances_));
    fs::create_directories(dir_);
    const auto issued =
        ca.issue_serving_cert("test webhook", 2, std::chrono::hours(24), {"hooks.testing.svc"});
    std::ofstream(dir_ / "tls.crt") << issued.cert_pem;
    std::ofstream(dir_ / "tls.key") << issued.key_pem;
    server::ServerOptions o;
    o.tls = server::TlsFiles{(dir_ / "tls.crt").string(), (dir_ / "tls.key").string()};
    o.threads = 2;
    o.shutdown_timeout = 3s;
    o.log = Logger::discard();
    server::Router router;
    router.add("POST", "/*", [this](const server::Request& r) { return answer(r); });
    server_ = std::make_unique<server::Server>(std::move(o), std::move(router));
    server_->start();
  }
  ~TestWebhook() {
    server_->stop();
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  uint16_t port() const { return server_->port(); }
  std::vector<std::pair<std::string, json>> received() const {
    std::lock_guard lock(mu_);
    return received_;
  }
  // The reviews sent to `path` (the target without its query).
  std::vector<json> received_at(const std::string& path) const {
    std::vector<json> out;
    for (const auto& [target, review] : received())
      if (target.substr(0, target.find('?')) == path) out.push_back(review);
    return out;
  }

 private:
  server::Response answer(const server::Request& r) {
    const json review = json::parse(r.body);
    {
      std::lock_guard lock(mu_);
      received_.emplace_back(r.target, review);
    }
    json response = {{"uid", review["request"]["uid"]}, {"allowed", true}};
    if (r.path == "/deny") {
      response["allowed"] = false;
      response["status"] = {{"code", 403}, {"message", "no thanks"}};
    } else if (r.path == "/deny-bare") {
      response["allowed"] = false;
    } else if (r.path == "/patch") {
      const json patch = json::array(
          {{{"op", "replace"}, {"path", "/spec/numNodes"}, {"value", 2}},
           {{"op", "add"}, {"path", "/metadata/labels"}, {"value", {{"patched", "yes"}}}}});
      response["patchType"] = "JSONPatch";
      response["patch"] = base64_encode(patch.dump());
      response["warnings"] = json::array({"spec.numNodes lowered from 4 to 2"});
    } else if (r.path == "/warn") {
      response["warnings"] = json::array({"careful: \"quoted\""});
    } else if (r.path == "/slow") {
      // A webhook that answers after the API server's timeout (the thing under test is
      // the timeout, so this sleep is the scenario, not a synchronisation).
      std::this_thread::sleep_for(2500ms);
    } else if (r.path == "/wrong-uid") {
      response["uid"] = "not-the-request-uid";
    }
    return server::Response::json(200, json({{"apiVersion", "admission.k8s.io/v1"},
                                             {"kind", "AdmissionReview"},
                                             {"response", response}})
                                           .dump());
  }

  static inline int instances_ = 0;
  fs::path dir_;
  std::unique_ptr<server::Server> server_;
  mutable std::mutex mu_;
  std::vector<std::pair<std::string, json>> received_;
};

class AdmissionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    api_.start();
    if (register_hooks_)
      api_.register_service("hooks", "testing", "127.0.0.1:" + std::to_string(hooks_.port()));
    client_ = std::make_unique<Client>(api_.port(), api_.pki_dir() + "/ca.crt");
    ASSERT_EQ(client_->connect(), "");
    const auto crd = yaml_documents_to_json(
        read_file(std::string(COMMGATE_SOURCE_DIR) + "/crds/trainingjobs.commgate.io.yaml"));
    ASSERT_EQ(
        call("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd.at(0).dump())
            .status,
        201);
    ASSERT_EQ(
        call("POST", "/api/v1/namespaces", R"({"metadata":{"name":"nlp","labels":{"team":"nlp"}}})")
            .status,
        201);
    ASSERT_EQ(call("POST", "/api/v1/namespaces", R"({"metadata":{"name":"vision"}})").status, 201);
  }

  Reply call(const std::string& method, const std::string& target, const std::string& body = "",
             const std::string& content_type = "application/json") {
    return client_->request(method, target, body,
                            {{"Authorization", "Bearer " + api_.token()},
                             {"Content-Type", content_type},
                             {"Accept", "application/json"}},
                            10s);
  }

  // A webhook entry calling path `path` on hooks.testing.svc, verified with our CA.
  json hook(const std::string& name, const std::string& path, json rules,
            const std::string& ca_pem = "") {
    return {{"name", name},
            {"clientConfig",
             {{"service", {{"name", "hooks"}, {"namespace", "testing"}, {"path", path}}},
              {"caBundle", base64_encode(ca_pem.empty() ? ca_.cert_pem() : ca_pem)}}},
            {"rules", std::move(rules)},
            {"sideEffects", "None"},
            {"admissionReviewVersions", {"v1"}}};
  }
  static json tj_rule(const std::vector<std::string>& operations,
                      const std::vector<std::string>& resources = {"trainingjobs"}) {
    return json::array({{{"operations", operations},
                         {"apiGroups", {"commgate.io"}},
                         {"apiVersions", {"v1alpha1"}},
                         {"resources", resources}}});
  }
  // std::vector, not json: `{hook(...)}` as a json parameter is an array under GCC and the
  // hook itself under clang (nlohmann's brace initialization; the sanitizer build is clang's).
  void configure(const std::string& kind, const std::string& name, std::vector<json> webhooks) {
    const std::string plural =
        kind == "Mutating" ? "mutatingwebhookconfigurations" : "validatingwebhookconfigurations";
    const json config = {{"apiVersion", "admissionregistration.k8s.io/v1"},
                         {"kind", kind + "WebhookConfiguration"},
                         {"metadata", {{"name", name}}},
                         {"webhooks", json(std::move(webhooks))}};
    const Reply r = call("POST", "/apis/admissionregistration.k8s.io/v1/" + plural, config.dump());
    ASSERT_EQ(r.status, 201) << r.body;
  }
  static std::string job(const std::string& name, int nodes = 4) {
    return json({{"apiVersion", "commgate.io/v1alpha1"},
                 {"kind", "TrainingJob"},
                 {"metadata", {{"name", name}}},
                 // Valid under the shipped CRD's schema, which the sim enforces.
                 {"spec",
                  {{"numNodes", nodes},
                   {"model", {{"parameters", "340M"}}},
                   {"template", {{"spec", {{"containers", {{{"name", "t"}, {"image", "i"}}}}}}}}}}})
        .dump();
  }
  static std::vector<std::string> warnings(const Reply& r) {
    std::vector<std::string> out;
    for (const auto& [k, v] : r.headers)
      if (k == "Warning") out.push_back(v);
    return out;
  }

  // The operator's service account as a second identity (commgate-sim --user).
  static ApiServerOptions options_with_operator() {
    ApiServerOptions o;
    o.users.push_back(parse_user_flag(std::string("operator-token=") + kOperator));
    return o;
  }

  bool register_hooks_ = true;  // where hooks.testing.svc listens, before each test
  server::CertificateAuthority ca_{"commgate admission test CA", 1, std::chrono::hours(24)};
  TestWebhook hooks_{ca_};
  ApiServer api_{options_with_operator()};
  std::unique_ptr<Client> client_;
};

TEST_F(AdmissionTest, mutating_patches_apply_in_order_and_warnings_become_headers) {
  // Configurations run in name order: a-patch before b-warn, which sees the patched job.
  configure("Mutating", "b-warn", {hook("warn.commgate.io", "/warn", tj_rule({"CREATE"}))});
  configure("Mutating", "a-patch", {hook("patch.commgate.io", "/patch", tj_rule({"CREATE"}))});
  const Reply r =
      call("POST", std::string(kTj) + "?fieldManager=kubectl-client-side-apply", job("bert"));
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(warnings(r), (std::vector<std::string>{R"(299 - "spec.numNodes lowered from 4 to 2")",
                                                   R"(299 - "careful: \"quoted\"")"}));
  const json stored = json::parse(call("GET", std::string(kTj) + "/bert").body);
  EXPECT_EQ(stored["spec"]["numNodes"], 2);
  EXPECT_EQ(stored["metadata"]["labels"]["patched"], "yes");

  const auto patched = hooks_.received_at("/patch");
  const auto warned = hooks_.received_at("/warn");
  ASSERT_EQ(patched.size(), 1u);
  ASSERT_EQ(warned.size(), 1u);
  EXPECT_EQ(warned[0]["request"]["object"]["spec"]["numNodes"], 2);
  const json& req = patched[0]["request"];
  EXPECT_EQ(patched[0]["apiVersion"], "admission.k8s.io/v1");
  EXPECT_EQ(req["operation"], "CREATE");
  EXPECT_EQ(req["kind"],
            json({{"group", "commgate.io"}, {"version", "v1alpha1"}, {"kind", "TrainingJob"}}));
  EXPECT_EQ(
      req["resource"],
      json({{"group", "commgate.io"}, {"version", "v1alpha1"}, {"resource", "trainingjobs"}}));
  EXPECT_EQ(req["requestResource"], req["resource"]);
  EXPECT_FALSE(req.contains("subResource"));
  EXPECT_EQ(req["name"], "bert");
  EXPECT_EQ(req["namespace"], "nlp");
  EXPECT_EQ(req["userInfo"]["username"], "kubernetes-admin");
  EXPECT_EQ(req["userInfo"]["groups"], json({"system:masters", "system:authenticated"}));
  EXPECT_TRUE(req["oldObject"].is_null());
  EXPECT_EQ(req["dryRun"], false);
  EXPECT_EQ(req["options"], json({{"kind", "CreateOptions"},
                                  {"apiVersion", "meta.k8s.io/v1"},
                                  {"fieldManager", "kubectl-client-side-apply"}}));
  EXPECT_EQ(req["uid"].get<std::string>().size(), 36u);
  EXPECT_NE(patched[0]["request"]["uid"], warned[0]["request"]["uid"]);
  // ?timeout= carries the webhook's timeout (default 10 s).
  EXPECT_EQ(hooks_.received()[0].first, "/patch?timeout=10s");
}

TEST_F(AdmissionTest, user_info_is_the_user_the_bearer_token_stands_for) {
  configure("Mutating", "a-allow",
            {hook("allow.commgate.io", "/allow", tj_rule({"CREATE", "UPDATE"}))});
  // The operator's token, read from the kubeconfig the sim writes for it.
  const auto kubeconfig = yaml_documents_to_json(api_.kubeconfig_for(kOperator)).at(0);
  const std::string token = kubeconfig["users"][0]["user"]["token"];
  EXPECT_EQ(kubeconfig["contexts"][0]["context"]["namespace"], "commgate-system");
  const auto as = [&](const std::string& bearer, const std::string& method,
                      const std::string& target, const std::string& body) {
    return client_->request(
        method, target, body,
        {{"Authorization", "Bearer " + bearer},
         {"Content-Type", method == "PATCH" ? "application/merge-patch+json" : "application/json"},
         {"Accept", "application/json"}},
        10s);
  };
  ASSERT_EQ(as(token, "POST", kTj, job("bert")).status, 201);
  ASSERT_EQ(call("POST", kTj, job("gpt")).status, 201);  // the admin
  ASSERT_EQ(as(token, "PATCH", std::string(kTj) + "/bert", R"({"spec":{"numNodes":2}})").status,
            200);
  // An unknown token is a 401 and reaches no webhook.
  const Reply stranger = as("not-a-token", "POST", kTj, job("llm"));
  EXPECT_EQ(stranger.status, 401);
  EXPECT_EQ(json::parse(stranger.body)["reason"], "Unauthorized");

  const auto reviews = hooks_.received_at("/allow");
  ASSERT_EQ(reviews.size(), 3u);
  const json operator_groups = {"system:serviceaccounts", "system:serviceaccounts:commgate-system",
                                "system:authenticated"};
  const json admin_groups = {"system:masters", "system:authenticated"};
  EXPECT_EQ(reviews[0]["request"]["userInfo"],
            json({{"username", kOperator}, {"groups", operator_groups}}));
  EXPECT_EQ(reviews[1]["request"]["userInfo"],
            json({{"username", "kubernetes-admin"}, {"groups", admin_groups}}));
  EXPECT_EQ(reviews[2]["request"]["operation"], "UPDATE");
  EXPECT_EQ(reviews[2]["request"]["userInfo"]["username"], kOperator);
  EXPECT_THROW(api_.kubeconfig_for("mallory"), std::invalid_argument);

  // `kubectl auth whoami` asks the same question.
  const Reply whoami =
      as(token, "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews",
         R"({"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"})");
  ASSERT_EQ(whoami.status, 201) << whoami.body;
  EXPECT_EQ(json::parse(whoami.body)["status"]["userInfo"],
            json({{"username", kOperator}, {"groups", operator_groups}}));
}

// A webhook that reads the sim's kubeconfig starts after the sim: the binary learns where
// its service listens through POST /sim/services.
class AdmissionLateServiceTest : public AdmissionTest {
 protected:
  AdmissionLateServiceTest() { register_hooks_ = false; }
};

TEST_F(AdmissionLateServiceTest, a_service_registered_over_the_admin_endpoint_is_called) {
  configure("Mutating", "a-allow", {hook("allow.commgate.io", "/allow", tj_rule({"CREATE"}))});
  const Reply before = call("POST", kTj, job("bert"));
  EXPECT_EQ(before.status, 500) << before.body;  // nowhere to call: failurePolicy Fail
  const std::string address = "127.0.0.1:" + std::to_string(hooks_.port());
  EXPECT_EQ(client_->request("POST", "/sim/services", "{}", {}).status, 401);
  const Reply missing = call("POST", "/sim/services", R"({"name":"hooks","namespace":"testing"})");
  EXPECT_EQ(missing.status, 400);
  EXPECT_NE(missing.body.find("body.address"), std::string::npos) << missing.body;
  const Reply bad = call("POST", "/sim/services",
                         R"({"name":"hooks","namespace":"testing","address":"no-port"})");
  EXPECT_EQ(bad.status, 400);
  EXPECT_NE(bad.body.find("HOST:PORT"), std::string::npos) << bad.body;
  ASSERT_EQ(call("POST", "/sim/services",
                 json({{"name", "hooks"}, {"namespace", "testing"}, {"address", address}}).dump())
                .status,
            200);
  EXPECT_EQ(call("POST", kTj, job("bert")).status, 201);
  EXPECT_EQ(hooks_.received_at("/allow").size(), 1u);
}

TEST_F(AdmissionTest, a_refusal_is_the_status_kube_apiserver_returns_and_nothing_is_stored) {
  configure("Validating", "deny", {hook("deny.commgate.io", "/deny", tj_rule({"CREATE"}))});
  const Reply r = call("POST", kTj, job("bert"));
  EXPECT_EQ(r.status, 403);
  const json status = json::parse(r.body);
  EXPECT_EQ(status["kind"], "Status");
  EXPECT_EQ(status["status"], "Failure");
  EXPECT_EQ(status["code"], 403);
  EXPECT_EQ(status["message"],
            "admission webhook \"deny.commgate.io\" denied the request: no thanks");
  EXPECT_EQ(call("GET", std::string(kTj) + "/bert").status, 404);

  // No code and no message: 400 "without explanation" (k8s.io/apiserver ToStatusErr).
  configure("Validating", "deny-bare",
            {hook("bare.commgate.io", "/deny-bare", tj_rule({"UPDATE"}))});
  ASSERT_EQ(
      call("DELETE", "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/deny")
          .status,
      200);
  ASSERT_EQ(call("POST", kTj, job("bert")).status, 201);
  const Reply bare = call("PATCH", std::string(kTj) + "/bert", R"({"spec":{"numNodes":3}})",
                          "application/merge-patch+json");
  EXPECT_EQ(bare.status, 400);
  EXPECT_EQ(json::parse(bare.body)["message"],
            "admission webhook \"bare.commgate.io\" denied the request without explanation");
}

TEST_F(AdmissionTest, rules_match_subresources_scope_and_namespace_selectors) {
  // Only the scale subresource: creating and patching the job pass, scaling is refused.
  configure("Validating", "scale",
            {hook("scale.commgate.io", "/deny", tj_rule({"UPDATE"}, {"trainingjobs/scale"}))});
  ASSERT_EQ(call("POST", kTj, job("bert")).status, 201);
  EXPECT_EQ(call("PATCH", std::string(kTj) + "/bert", R"({"spec":{"numNodes":5}})",
                 "application/merge-patch+json")
                .status,
            200);
  const Reply scaled = call("PATCH", std::string(kTj) + "/bert/scale", R"({"spec":{"replicas":8}})",
                            "application/merge-patch+json");
  EXPECT_EQ(scaled.status, 403) << scaled.body;
  ASSERT_EQ(hooks_.received_at("/deny").size(), 1u);
  const json req = hooks_.received_at("/deny")[0]["request"];
  EXPECT_EQ(req["subResource"], "scale");
  EXPECT_EQ(req["kind"], json({{"group", "autoscaling"}, {"version", "v1"}, {"kind", "Scale"}}));
  EXPECT_EQ(req["object"]["spec"]["replicas"], 8);
  EXPECT_EQ(req["oldObject"]["spec"]["replicas"], 5);
  EXPECT_EQ(json::parse(call("GET", std::string(kTj) + "/bert").body)["spec"]["numNodes"], 5);

  // "trainingjobs" names the main resource only: the status subresource is not sent.
  configure("Validating", "main", {hook("main.commgate.io", "/deny-bare", tj_rule({"UPDATE"}))});
  EXPECT_EQ(call("PATCH", std::string(kTj) + "/bert/status", R"({"status":{"phase":"Running"}})",
                 "application/merge-patch+json")
                .status,
            200);
  EXPECT_EQ(call("PATCH", std::string(kTj) + "/bert", R"({"spec":{"numNodes":3}})",
                 "application/merge-patch+json")
                .status,
            400);

  // namespaceSelector: matched against the namespace object's labels.
  json selected = hook("team.commgate.io", "/deny", tj_rule({"CREATE"}));
  selected["namespaceSelector"] = {{"matchLabels", {{"team", "nlp"}}}};
  configure("Validating", "team", {selected});
  EXPECT_EQ(call("POST", "/apis/commgate.io/v1alpha1/namespaces/vision/trainingjobs", job("resnet"))
                .status,
            201);
  EXPECT_EQ(call("POST", kTj, job("gpt")).status, 403);
  // Scope: a Cluster-scoped rule does not see namespaced jobs.
  json cluster = hook("cluster.commgate.io", "/deny", tj_rule({"DELETE"}));
  cluster["rules"][0]["scope"] = "Cluster";
  configure("Validating", "cluster", {cluster});
  EXPECT_EQ(
      call("DELETE", "/apis/commgate.io/v1alpha1/namespaces/vision/trainingjobs/resnet").status,
      200);
}

TEST_F(AdmissionTest, failure_policy_fail_refuses_and_ignore_proceeds) {
  // A registered service where nothing listens (port 1 on loopback: refused at once).
  api_.register_service("gone", "testing", "127.0.0.1:1");
  json fail = hook("gone.commgate.io", "/allow", tj_rule({"CREATE"}));
  fail["clientConfig"]["service"]["name"] = "gone";
  configure("Validating", "gone", {fail});
  const Reply r = call("POST", kTj, job("bert"));
  EXPECT_EQ(r.status, 500);
  const json status = json::parse(r.body);
  EXPECT_EQ(status["reason"], "InternalError");
  EXPECT_EQ(status["message"],
            "Internal error occurred: failed calling webhook \"gone.commgate.io\": failed to call "
            "webhook: Post \"https://gone.testing.svc:443/allow?timeout=10s\": dial tcp "
            "127.0.0.1:1: connect: connection refused");
  EXPECT_EQ(
      status["details"]["causes"][0]["message"],
      status["message"].get<std::string>().substr(std::string("Internal error occurred: ").size()));

  fail["failurePolicy"] = "Ignore";
  fail["name"] = "gone-ignored.commgate.io";
  ASSERT_EQ(
      call("DELETE", "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/gone")
          .status,
      200);
  configure("Validating", "gone-ignored", {fail});
  EXPECT_EQ(call("POST", kTj, job("bert")).status, 201);
}

TEST_F(AdmissionTest, the_certificate_is_verified_against_the_ca_bundle_and_the_service_name) {
  server::CertificateAuthority other("another CA", 7, std::chrono::hours(24));
  configure("Validating", "wrong-ca",
            {hook("wrong-ca.commgate.io", "/allow", tj_rule({"CREATE"}), other.cert_pem())});
  const Reply r = call("POST", kTj, job("bert"));
  EXPECT_EQ(r.status, 500);
  EXPECT_NE(r.body.find("failed calling webhook \\\"wrong-ca.commgate.io\\\": failed to call "
                        "webhook: Post \\\"https://hooks.testing.svc:443/allow?timeout=10s\\\": "
                        "tls: failed to verify certificate: x509: certificate signed by unknown "
                        "authority"),
            std::string::npos)
      << r.body;
  EXPECT_TRUE(hooks_.received().empty());
  ASSERT_EQ(call("DELETE",
                 "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/wrong-ca")
                .status,
            200);

  // The right CA, but the certificate does not name the service the config points at.
  api_.register_service("elsewhere", "testing", "127.0.0.1:" + std::to_string(hooks_.port()));
  json misnamed = hook("misnamed.commgate.io", "/allow", tj_rule({"CREATE"}));
  misnamed["clientConfig"]["service"]["name"] = "elsewhere";
  configure("Validating", "misnamed", {misnamed});
  const Reply m = call("POST", kTj, job("bert"));
  EXPECT_EQ(m.status, 500);
  EXPECT_NE(m.body.find("x509: certificate is not valid for elsewhere.testing.svc"),
            std::string::npos)
      << m.body;
  EXPECT_TRUE(hooks_.received().empty());
}

TEST_F(AdmissionTest, a_slow_webhook_times_out_and_a_wrong_uid_is_a_failed_call) {
  json slow = hook("slow.commgate.io", "/slow", tj_rule({"CREATE"}));
  slow["timeoutSeconds"] = 1;
  configure("Validating", "slow", {slow});
  const auto start = std::chrono::steady_clock::now();
  const Reply r = call("POST", kTj, job("bert"));
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
  EXPECT_EQ(r.status, 500);
  EXPECT_NE(r.body.find("Post \\\"https://hooks.testing.svc:443/slow?timeout=1s\\\": context "
                        "deadline exceeded"),
            std::string::npos)
      << r.body;
  ASSERT_EQ(
      call("DELETE", "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/slow")
          .status,
      200);

  configure("Validating", "uid", {hook("uid.commgate.io", "/wrong-uid", tj_rule({"CREATE"}))});
  const Reply u = call("POST", kTj, job("bert"));
  EXPECT_EQ(u.status, 500);
  EXPECT_NE(u.body.find("received invalid webhook response: expected response.uid="),
            std::string::npos)
      << u.body;
}

TEST_F(AdmissionTest, dry_run_admits_and_answers_but_persists_nothing) {
  configure("Mutating", "patch",
            {hook("patch.commgate.io", "/patch", tj_rule({"CREATE", "UPDATE"}))});
  configure("Validating", "allow", {hook("allow.commgate.io", "/allow", tj_rule({"*"}))});
  const uint64_t before = api_.store().resource_version();
  const Reply created = call("POST", std::string(kTj) + "?dryRun=All", job("bert"));
  ASSERT_EQ(created.status, 201) << created.body;
  const json would_be = json::parse(created.body);
  EXPECT_EQ(would_be["spec"]["numNodes"], 2);
  EXPECT_FALSE(would_be["metadata"].contains("resourceVersion"));
  EXPECT_FALSE(warnings(created).empty());
  EXPECT_EQ(call("GET", std::string(kTj) + "/bert").status, 404);
  EXPECT_EQ(api_.store().resource_version(), before);
  const json sent = hooks_.received_at("/allow").at(0)["request"];
  EXPECT_EQ(sent["dryRun"], true);
  EXPECT_EQ(sent["options"]["dryRun"], json({"All"}));
  EXPECT_EQ(sent["object"]["spec"]["numNodes"], 2);  // validating sees the mutated job

  ASSERT_EQ(call("POST", kTj, job("bert")).status, 201);
  const uint64_t stored = api_.store().resource_version();
  const Reply patched = call("PATCH", std::string(kTj) + "/bert?dryRun=All",
                             R"({"spec":{"minNodes":2}})", "application/merge-patch+json");
  ASSERT_EQ(patched.status, 200) << patched.body;
  EXPECT_EQ(json::parse(patched.body)["spec"]["minNodes"], 2);
  // Still the CRD's default, stored on create.
  EXPECT_EQ(json::parse(call("GET", std::string(kTj) + "/bert").body)["spec"]["minNodes"], 1);
  EXPECT_EQ(call("DELETE", std::string(kTj) + "/bert?dryRun=All").status, 200);
  EXPECT_EQ(call("GET", std::string(kTj) + "/bert").status, 200);
  EXPECT_EQ(api_.store().resource_version(), stored);

  // A webhook with side effects cannot see a dry run: the request is refused (400).
  json effects = hook("effects.commgate.io", "/allow", tj_rule({"CREATE"}));
  effects["sideEffects"] = "Some";
  configure("Validating", "effects", {effects});
  const Reply refused = call("POST", std::string(kTj) + "?dryRun=All", job("gpt"));
  EXPECT_EQ(refused.status, 400);
  EXPECT_EQ(json::parse(refused.body)["message"],
            "admission webhook \"effects.commgate.io\" does not support dry run");
  EXPECT_EQ(call("POST", kTj, job("gpt")).status, 201);
  EXPECT_EQ(call("POST", std::string(kTj) + "?dryRun=Some", job("x")).status, 400);

  // A dry-run CRD is checked and answered, but its resource is not served.
  const auto crd = yaml_documents_to_json(
      read_file(std::string(COMMGATE_SOURCE_DIR) + "/crds/commpolicies.commgate.io.yaml"));
  const Reply dry_crd =
      call("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions?dryRun=All",
           crd.at(0).dump());
  ASSERT_EQ(dry_crd.status, 201) << dry_crd.body;
  EXPECT_EQ(json::parse(dry_crd.body)["status"]["conditions"][1]["type"], "Established");
  EXPECT_EQ(call("GET", "/apis/commgate.io/v1alpha1/commpolicies").status, 404);
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::sim
