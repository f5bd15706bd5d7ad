// `commgate webhook --kubeconfig`: the real binary watching an in-process simulated API
// server. /readyz turns 200 once the policies, profiles and namespaces are listed; flag
// conflicts and a kubeconfig that does not load are fatal at start.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "core/yaml_json.h"
#include "sim/api_server.h"
#include "tests/kube/kube_test_support.h"
#include "tests/server/test_client.h"
#include "tests/server/test_pki.h"
#include "tests/support/builders.h"
#include "tests/support/child_process.h"
#include "tests/webhook/webhook_test_support.h"

namespace commgate::kube {
namespace COMMGATE_TEST_UNIT {

namespace fs = std::filesystem;
using testing::wait_until;

using commgate::testing::ChildProcess;

// `commgate webhook ARGS...` as a child process, its output in `log`.
ChildProcess start_webhook(std::vector<std::string> args, const fs::path& log) {
  args.insert(args.begin(), {COMMGATE_BINARY, "webhook"});
  return ChildProcess(args, log);
}

int readyz(uint16_t port, const std::string& ca_file) {
  server::testing::Client c(port, ca_file);
  if (!c.connect().empty()) return 0;
  try {
    return c.request("GET", "/readyz").status;
  } catch (const std::exception&) {
    return 0;
  }
}

TEST(WebhookKubeMode, BecomesReadyOnceTheClusterIsListed) {
  sim::ApiServer api;
  api.start();
  server::testing::TestPki pki;
  pki.issue_server_cert(1);
  const fs::path kubeconfig = fs::path(pki.ca_file()).parent_path() / "kubeconfig";
  std::ofstream(kubeconfig) << api.kubeconfig();

  ChildProcess p =
      start_webhook({"--port", "0", "--address", "127.0.0.1", "--tls-cert-file", pki.cert_file(),
                     "--tls-private-key-file", pki.key_file(), "--kubeconfig", kubeconfig.string()},
                    kubeconfig.parent_path() / "webhook.log");
  const uint16_t port = p.wait_for_port(std::regex("listening on [^ ]*:([0-9]+)"));
  ASSERT_NE(port, 0) << p.output();
  // No CRDs yet: the CommPolicy and CommProfile lists fail, so it is not ready.
  ASSERT_TRUE(wait_until([&] { return p.output().find("commpolicies") != std::string::npos; }))
      << p.output();
  EXPECT_EQ(readyz(port, pki.ca_file()), 503);

  const auto crds =
      *api.store().find_resource("apiextensions.k8s.io", "v1", "customresourcedefinitions");
  for (const char* file : {"commpolicies.commgate.io.yaml", "commprofiles.commgate.io.yaml"}) {
    std::ifstream in(std::string(COMMGATE_SOURCE_DIR) + "/crds/" + file);
    std::stringstream text;
    text << in.rdbuf();
    for (const auto& doc : yaml_documents_to_json(text.str())) api.store().create(crds, "", doc);
  }
  EXPECT_TRUE(
      wait_until([&] { return readyz(port, pki.ca_file()) == 200; }, std::chrono::seconds(20)))
      << p.output();
  EXPECT_NE(p.output().find("watching policies and profiles through " + api.url()),
            std::string::npos)
      << p.output();

  // One admission, as the API server makes it: /mutate, then /validate. Issue #20 defect
  // 9: it is one admission in commgate_webhook_admissions_total, and every family the
  // chart's dashboard reads is on /metrics.
  const std::string review =
      webhook::testing::a_create_of(
          commgate::testing::a_training_job("bert").nodes(4).set("/spec/suspend", true).json())
          .body();
  server::testing::Client c(port, pki.ca_file());
  ASSERT_EQ(c.connect(), "");
  const std::vector<std::pair<std::string, std::string>> json_body = {
      {"Content-Type", "application/json"}};
  EXPECT_EQ(c.request("POST", "/mutate", review, json_body).status, 200);
  EXPECT_EQ(c.request("POST", "/validate", review, json_body).status, 200);
  const std::string metrics = c.request("GET", "/metrics").body;
  EXPECT_NE(metrics.find("commgate_webhook_admissions_total{decision=\"Gate\"} 1\n"),
            std::string::npos)
      << metrics;
  std::ifstream in(std::string(COMMGATE_SOURCE_DIR) + "/charts/commgate/dashboards/commgate.json");
  std::stringstream dashboard;
  dashboard << in.rdbuf();
  const std::string text = dashboard.str();
  const std::regex family("commgate_webhook_[a-z_]+");
  int families = 0;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), family);
       it != std::sregex_iterator(); ++it, ++families)
    EXPECT_NE(metrics.find("\n" + it->str()), std::string::npos)
        << "the dashboard reads " << it->str() << ", which the webhook's /metrics lacks";
  EXPECT_GE(families, 8);
  EXPECT_EQ(p.terminate(), 0) << p.output();
}

TEST(WebhookKubeMode, ConflictingOrBrokenConfigurationIsFatal) {
  server::testing::TestPki pki;
  pki.issue_server_cert(1);
  const std::vector<std::string> tls = {
      "--port", "0", "--tls-cert-file", pki.cert_file(), "--tls-private-key-file", pki.key_file()};
  {
    auto args = tls;
    args.insert(args.end(), {"--kubeconfig", "/x", "--policy-dir", "/y"});
    ChildProcess p = start_webhook(args, fs::path(pki.ca_file()).parent_path() / "a.log");
    EXPECT_EQ(p.wait_exit(), 2);
    EXPECT_NE(p.output().find("cannot be combined"), std::string::npos) << p.output();
  }
  {
    auto args = tls;
    args.insert(args.end(), {"--kubeconfig", "/nonexistent/kubeconfig"});
    ChildProcess p = start_webhook(args, fs::path(pki.ca_file()).parent_path() / "b.log");
    EXPECT_EQ(p.wait_exit(), 2);
    EXPECT_NE(p.output().find("/nonexistent/kubeconfig"), std::string::npos) << p.output();
  }
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::kube
