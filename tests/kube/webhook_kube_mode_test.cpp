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
#include "tests/support/child_process.h"

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

}  // namespace
}  // namespace commgate::kube
