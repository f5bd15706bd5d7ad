// End to end: `kubectl edit` (v1.32) of an object whose change a validating webhook
// refuses, against the simulated API server. The API server answers the webhook's Status
// as kube-apiserver's webhookerrors.ToStatusErr does (its code, reason and details, the
// message prefixed with `admission webhook "<name>" denied the request: `); what the user
// sees then depends on the webhook's answer, as kubectl's editResults.addError reads it:
// - 403 (or any code but 422 Invalid): `error: <resource> "<name>" could not be patched:
//   <message>`, the edit kept in a temp file;
// - 422 Invalid: `error: <resource> "<name>" is invalid` and the editor opens again with
//   `# * <field>: <message>` for each of details.causes, and nothing else: without causes
//   the webhook's message is never shown.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "core/base64.h"
#include "server/pki.h"
#include "server/server.h"
#include "sim/api_server.h"
#include "tests/support/kubectl.h"

namespace commgate::sim {
namespace COMMGATE_TEST_UNIT {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace std::chrono_literals;
using testing::Kubectl;
using testing::KubectlResult;

constexpr const char* kRefusal = "data.k: must stay one";

// Refuses every review, with the answer its path names: /forbidden (403), /invalid-causes
// (422 with details.causes), /invalid-bare (422 without details).
class RefusingWebhook {
 public:
  RefusingWebhook(const server::CertificateAuthority& ca, const fs::path& dir) {
    const auto issued =
        ca.issue_serving_cert("test webhook", 2, std::chrono::hours(24), {"hooks.testing.svc"});
    std::ofstream(dir / "hook.crt") << issued.cert_pem;
    std::ofstream(dir / "hook.key") << issued.key_pem;
    server::ServerOptions o;
    o.tls = server::TlsFiles{(dir / "hook.crt").string(), (dir / "hook.key").string()};
    o.threads = 2;
    o.shutdown_timeout = 3s;
    o.log = Logger::discard();
    server::Router router;
    router.add("POST", "/*", [](const server::Request& r) {
      const json review = json::parse(r.body);
      json status = {{"message", kRefusal}};
      if (r.path == "/forbidden") {
        status.update({{"code", 403}, {"reason", "Forbidden"}});
      } else {
        status.update({{"code", 422}, {"reason", "Invalid"}});
        if (r.path == "/invalid-causes")
          status["details"] = {{"name", "cfg"},
                               {"kind", "ConfigMap"},
                               {"causes",
                                {{{"reason", "FieldValueInvalid"},
                                  {"field", "data.k"},
                                  {"message", "must stay one"}}}}};
      }
      const json response = {
          {"uid", review["request"]["uid"]}, {"allowed", false}, {"status", status}};
      return server::Response::json(200, json({{"apiVersion", "admission.k8s.io/v1"},
                                               {"kind", "AdmissionReview"},
                                               {"response", response}})
                                             .dump());
    });
    server_ = std::make_unique<server::Server>(std::move(o), std::move(router));
    server_->start();
  }
  ~RefusingWebhook() { server_->stop(); }
  uint16_t port() const { return server_->port(); }

 private:
  std::unique_ptr<server::Server> server_;
};

std::string slurp(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class KubectlEditTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (!fs::exists(COMMGATE_KUBECTL)) GTEST_SKIP() << "no kubectl";
    api_.start();
    dir_ = api_.pki_dir();
    kubectl_ = Kubectl::with_kubeconfig(COMMGATE_KUBECTL, dir_, api_.kubeconfig(), 30s);
    hook_ = std::make_unique<RefusingWebhook>(ca_, dir_);
    api_.register_service("hooks", "testing", "127.0.0.1:" + std::to_string(hook_->port()));
    // The editor: change the value, and keep each file kubectl opened it on. Opened again
    // after a refusal, it changes nothing more, so kubectl stops ("Edit cancelled").
    const fs::path editor = dir_ / "editor.sh";
    std::ofstream(editor) << "#!/bin/sh\ncat \"$1\" >> '" << (dir_ / "opened").string()
                          << "'\necho '-----' >> '" << (dir_ / "opened").string()
                          << "'\nsed -i 's/k: one$/k: two/' \"$1\"\n";
    fs::permissions(editor, fs::perms::owner_all);
  }

  using Result = KubectlResult;
  Result kubectl(const std::vector<std::string>& args, const std::vector<std::string>& env = {}) {
    return kubectl_.run(args, env);
  }
  void apply(const json& object) {
    const fs::path file = dir_ / ("apply-" + std::to_string(++calls_) + ".json");
    std::ofstream(file) << object.dump();
    Result r = kubectl({"apply", "-f", file.string()});
    ASSERT_EQ(r.code, 0) << r.output;
  }

  server::CertificateAuthority ca_{"kubectl edit test CA", 1, std::chrono::hours(24)};
  ApiServer api_;
  fs::path dir_;
  std::unique_ptr<RefusingWebhook> hook_;
  Kubectl kubectl_;
  int calls_ = 0;
};

TEST_P(KubectlEditTest, a_refused_edit_shows_what_the_webhook_answer_allows) {
  const std::string path = GetParam();
  apply({{"apiVersion", "v1"},
         {"kind", "ConfigMap"},
         {"metadata", {{"name", "cfg"}, {"namespace", "default"}}},
         {"data", {{"k", "one"}}}});
  apply({{"apiVersion", "admissionregistration.k8s.io/v1"},
         {"kind", "ValidatingWebhookConfiguration"},
         {"metadata", {{"name", "refuse"}}},
         {"webhooks",
          {{{"name", "refuse.test.io"},
            {"clientConfig",
             {{"service", {{"name", "hooks"}, {"namespace", "testing"}, {"path", path}}},
              {"caBundle", base64_encode(ca_.cert_pem())}}},
            {"rules",
             {{{"operations", {"UPDATE"}},
               {"apiGroups", {""}},
               {"apiVersions", {"v1"}},
               {"resources", {"configmaps"}}}}},
            {"sideEffects", "None"},
            {"admissionReviewVersions", {"v1"}}}}}});

  // kubectl keeps a refused edit's file in $TMPDIR ("A copy of your changes has been
  // stored to ..."): in the test's directory, not /tmp.
  Result edit =
      kubectl({"edit", "configmap", "cfg", "-n", "default", "-o", "yaml"},
              {"KUBE_EDITOR=" + (dir_ / "editor.sh").string(), "TMPDIR=" + dir_.string()});
  EXPECT_NE(edit.code, 0) << edit.output;
  const std::string opened = slurp(dir_ / "opened");
  const std::string denied =
      std::string("admission webhook \"refuse.test.io\" denied the request: ") + kRefusal;
  if (path == "/forbidden") {
    EXPECT_NE(edit.output.find("error: configmaps \"cfg\" could not be patched: " + denied),
              std::string::npos)
        << edit.output;
  } else {
    EXPECT_NE(edit.output.find("error: configmaps \"cfg\" is invalid"), std::string::npos)
        << edit.output;
    // The editor opened again, with the refusal's causes as its header.
    EXPECT_NE(opened.find("# configmaps \"cfg\" was not valid"), std::string::npos) << opened;
    if (path == "/invalid-causes") {
      EXPECT_NE(opened.find("# * data.k: must stay one"), std::string::npos) << opened;
    } else {
      // A 422 without details.causes: the webhook's message reaches the user nowhere.
      EXPECT_EQ(opened.find("must stay one"), std::string::npos) << opened;
      EXPECT_EQ(edit.output.find("must stay one"), std::string::npos) << edit.output;
    }
  }
  Result get = kubectl({"get", "configmap", "cfg", "-n", "default", "-o", "jsonpath={.data.k}"});
  EXPECT_EQ(get.output, "one");
}

INSTANTIATE_TEST_SUITE_P(Answers, KubectlEditTest,
                         ::testing::Values("/forbidden", "/invalid-causes", "/invalid-bare"),
                         [](const auto& param_info) {
                           std::string name = param_info.param.substr(1);
                           for (char& ch : name)
                             if (ch == '-') ch = '_';
                           return name;
                         });

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::sim
