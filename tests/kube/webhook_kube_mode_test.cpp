// `commgate webhook --kubeconfig`: the real binary watching an in-process simulated API
// server. /readyz turns 200 once the policies, profiles and namespaces are listed; flag
// conflicts and a kubeconfig that does not load are fatal at start.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <mutex>
#include <regex>
#include <sstream>
#include <thread>

#include "core/yaml_json.h"
#include "sim/api_server.h"
#include "tests/kube/kube_test_support.h"
#include "tests/server/test_client.h"
#include "tests/server/test_pki.h"

namespace commgate::kube {
namespace {

namespace fs = std::filesystem;
using testing::wait_until;

// `commgate webhook ...` as a child process, its stderr collected by a thread. (A trimmed
// copy of the one in tests/webhook/webhook_https_test.cpp, which is file-local there.)
class WebhookProcess {
 public:
  explicit WebhookProcess(std::vector<std::string> args) {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe");
    pid_ = fork();
    if (pid_ == 0) {
      dup2(fds[1], 2);
      std::vector<char*> argv;
      static std::string binary = COMMGATE_BINARY, command = "webhook";
      argv.push_back(binary.data());
      argv.push_back(command.data());
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(binary.c_str(), argv.data());
      _exit(127);
    }
    close(fds[1]);
    reader_ = std::thread([this, fd = fds[0]] {
      char buf[4096];
      ssize_t n;
      while ((n = read(fd, buf, sizeof buf)) > 0) {
        std::lock_guard lock(mu_);
        log_.append(buf, static_cast<size_t>(n));
      }
      close(fd);
    });
  }
  ~WebhookProcess() {
    if (!exited_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (reader_.joinable()) reader_.join();
  }
  std::string log() const {
    std::lock_guard lock(mu_);
    return log_;
  }
  uint16_t wait_for_port() {
    static const std::regex kListening("listening on [^ ]*:([0-9]+)");
    uint16_t port = 0;
    wait_until([&] {
      std::smatch m;
      const std::string text = log();
      if (std::regex_search(text, m, kListening)) port = static_cast<uint16_t>(std::stoi(m[1]));
      return port != 0 || exited();
    });
    return port;
  }
  bool exited() {
    if (exited_) return true;
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      exited_ = true;
      exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    return exited_;
  }
  int wait_for_exit() {
    if (!wait_until([&] { return exited(); }, std::chrono::seconds(15))) return -1;
    if (reader_.joinable()) reader_.join();
    return exit_code_;
  }
  int terminate() {
    kill(pid_, SIGTERM);
    return wait_for_exit();
  }

 private:
  pid_t pid_ = -1;
  bool exited_ = false;
  int exit_code_ = -1;
  mutable std::mutex mu_;
  std::string log_;
  std::thread reader_;
};

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

  WebhookProcess p({"--port", "0", "--address", "127.0.0.1", "--tls-cert-file", pki.cert_file(),
                    "--tls-private-key-file", pki.key_file(), "--kubeconfig", kubeconfig.string()});
  const uint16_t port = p.wait_for_port();
  ASSERT_NE(port, 0) << p.log();
  // No CRDs yet: the CommPolicy and CommProfile lists fail, so it is not ready.
  ASSERT_TRUE(wait_until([&] { return p.log().find("commpolicies") != std::string::npos; }))
      << p.log();
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
      << p.log();
  EXPECT_NE(p.log().find("watching policies and profiles through " + api.url()), std::string::npos)
      << p.log();
  EXPECT_EQ(p.terminate(), 0) << p.log();
}

TEST(WebhookKubeMode, ConflictingOrBrokenConfigurationIsFatal) {
  server::testing::TestPki pki;
  pki.issue_server_cert(1);
  const std::vector<std::string> tls = {
      "--port", "0", "--tls-cert-file", pki.cert_file(), "--tls-private-key-file", pki.key_file()};
  {
    auto args = tls;
    args.insert(args.end(), {"--kubeconfig", "/x", "--policy-dir", "/y"});
    WebhookProcess p(args);
    EXPECT_EQ(p.wait_for_exit(), 2);
    EXPECT_NE(p.log().find("cannot be combined"), std::string::npos) << p.log();
  }
  {
    auto args = tls;
    args.insert(args.end(), {"--kubeconfig", "/nonexistent/kubeconfig"});
    WebhookProcess p(args);
    EXPECT_EQ(p.wait_for_exit(), 2);
    EXPECT_NE(p.log().find("/nonexistent/kubeconfig"), std::string::npos) << p.log();
  }
}

}  // namespace
}  // namespace commgate::kube
