// End to end, all real binaries (commgate-sim, the real `commgate webhook` behind it over
// HTTPS, the real kubectl): an edit of a TrainingJob that the webhook refuses as invalid
// shows the user the field and why (issue #11). kubectl shows a 422 Invalid only through
// status.details.causes: `kubectl apply` prints `The TrainingJob "x" is invalid: <field>:
// <message>`, `kubectl edit` reopens the editor with `# * <field>: <message>` above it.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "core/base64.h"
#include "server/pki.h"
#include "tests/support/child_process.h"

namespace commgate::sim {
namespace COMMGATE_TEST_UNIT {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

const std::string kSource = COMMGATE_SOURCE_DIR;

using testing::ChildProcess;
using testing::read_file;

class WebhookRefusalE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(COMMGATE_KUBECTL)) GTEST_SKIP() << "no kubectl";
    dir_ = fs::temp_directory_path() / ("commgate-refusal-e2e-" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "policies");
    fs::create_directories(dir_ / "profiles");  // none: a new job is gated, not refused
    fs::copy_file(kSource + "/examples/policies/default.yaml", dir_ / "policies" / "default.yaml");
    const auto issued = ca_.issue_serving_cert("commgate-webhook", 2, std::chrono::hours(24),
                                               {"commgate-webhook.commgate-system.svc"});
    std::ofstream(dir_ / "tls.crt") << issued.cert_pem;
    std::ofstream(dir_ / "tls.key") << issued.key_pem;

    webhook_ = std::make_unique<ChildProcess>(
        std::vector<std::string>{COMMGATE_BINARY, "webhook", "--port", "0", "--address",
                                 "127.0.0.1", "--tls-cert-file", (dir_ / "tls.crt").string(),
                                 "--tls-private-key-file", (dir_ / "tls.key").string(),
                                 "--policy-dir", (dir_ / "policies").string(), "--profile-dir",
                                 (dir_ / "profiles").string()},
        dir_ / "webhook.log");
    const uint16_t webhook_port =
        webhook_->wait_for_port(std::regex("listening on 127\\.0\\.0\\.1:([0-9]+)"));
    ASSERT_NE(webhook_port, 0) << webhook_->output();

    kubeconfig_ = (dir_ / "kubeconfig").string();
    sim_ = std::make_unique<ChildProcess>(
        std::vector<std::string>{
            COMMGATE_SIM_BIN, "--port", "0", "--kubeconfig-out", kubeconfig_, "--service",
            "commgate-webhook.commgate-system=127.0.0.1:" + std::to_string(webhook_port)},
        dir_ / "sim.log");
    ASSERT_NE(sim_->wait_for_port(std::regex("listening on https://[^ ]+ port ([0-9]+)")), 0)
        << sim_->output();

    for (const char* crd : {"trainingjobs", "commprofiles", "commpolicies"}) {
      const auto r = kubectl({"apply", "-f", kSource + "/crds/" + crd + ".commgate.io.yaml"});
      ASSERT_EQ(r.code, 0) << r.output;
    }
    ASSERT_EQ(kubectl({"create", "namespace", "nlp"}).code, 0);
    std::string configs = read_file(kSource + "/deploy/webhook-configurations.yaml");
    const std::string placeholder = "REPLACE_WITH_BASE64_CA_BUNDLE";
    for (auto at = configs.find(placeholder); at != std::string::npos;
         at = configs.find(placeholder))
      configs.replace(at, placeholder.size(), base64_encode(ca_.cert_pem()));
    std::ofstream(dir_ / "webhook-configurations.yaml") << configs;
    const auto applied = kubectl({"apply", "-f", (dir_ / "webhook-configurations.yaml").string()});
    ASSERT_EQ(applied.code, 0) << applied.output;

    const auto created = kubectl({"apply", "-f", kSource + "/examples/jobs/bert-large-350m.yaml"});
    ASSERT_EQ(created.code, 0) << created.output << webhook_->output();
  }
  void TearDown() override {
    sim_.reset();
    webhook_.reset();
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }

  struct Result {
    int code;
    std::string output;
  };
  Result kubectl(std::vector<std::string> args) {
    std::vector<std::string> argv = {
        COMMGATE_KUBECTL,          "--kubeconfig",         kubeconfig_, "--cache-dir",
        (dir_ / "cache").string(), "--request-timeout=10s"};
    argv.insert(argv.end(), args.begin(), args.end());
    ChildProcess p(argv, dir_ / ("kubectl-" + std::to_string(++calls_) + ".out"));
    const int code = p.wait_exit(20s);
    return {code, p.output()};
  }

  server::CertificateAuthority ca_{"commgate refusal e2e CA", 1, std::chrono::hours(24)};
  fs::path dir_;
  std::string kubeconfig_;
  std::unique_ptr<ChildProcess> webhook_;
  std::unique_ptr<ChildProcess> sim_;
  int calls_ = 0;
};

// spec.policyRef naming no CommPolicy passes the CRD schema; commgate refuses it (422).
const char* const kCause = "spec.policyRef.name: CommPolicy \"nope\" not found";

TEST_F(WebhookRefusalE2eTest, kubectl_apply_of_an_invalid_edit_prints_the_field_and_message) {
  std::string job = read_file(kSource + "/examples/jobs/bert-large-350m.yaml");
  const auto spec = job.find("\nspec:\n");
  ASSERT_NE(spec, std::string::npos);
  job.insert(spec + 7, "  policyRef:\n    name: nope\n");
  std::ofstream(dir_ / "edited.yaml") << job;
  const auto r = kubectl({"apply", "-f", (dir_ / "edited.yaml").string()});
  EXPECT_NE(r.code, 0) << r.output;
  EXPECT_NE(r.output.find(std::string("The TrainingJob \"bert-large\" is invalid: ") + kCause),
            std::string::npos)
      << r.output << webhook_->output();
}

TEST_F(WebhookRefusalE2eTest, kubectl_edit_refused_as_invalid_lists_the_field_and_message) {
  // The editor adds the policyRef once and keeps each file it was opened on; opened again
  // after the refusal it changes nothing, so kubectl stops.
  const fs::path editor = dir_ / "editor.sh";
  const std::string opened = (dir_ / "opened").string();
  std::ofstream(editor) << "#!/bin/sh\ncat \"$1\" >> '" << opened << "'\necho '-----' >> '"
                        << opened << "'\ngrep -q 'name: nope' \"$1\" || "
                        << "sed -i 's/^spec:$/spec:\\n  policyRef:\\n    name: nope/' \"$1\"\n";
  fs::permissions(editor, fs::perms::owner_all);
  fs::create_directories(dir_ / "tmp");
  // kubectl reads its editor from the environment, and keeps a refused edit in $TMPDIR.
  ::setenv("KUBE_EDITOR", editor.c_str(), 1);
  ::setenv("TMPDIR", (dir_ / "tmp").c_str(), 1);
  const auto r = kubectl({"edit", "tj", "-n", "nlp", "bert-large"});
  ::unsetenv("KUBE_EDITOR");
  ::unsetenv("TMPDIR");
  EXPECT_NE(r.code, 0) << r.output;
  const std::string files = read_file(opened);
  const auto second = files.find("-----\n");
  ASSERT_NE(second, std::string::npos) << files;
  // The editor opened again, with the refusal's cause as its header.
  EXPECT_NE(files.find(std::string("# * ") + kCause, second), std::string::npos)
      << files << r.output;
  EXPECT_NE(r.output.find("trainingjobs.commgate.io \"bert-large\" is invalid"), std::string::npos)
      << r.output;
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::sim
