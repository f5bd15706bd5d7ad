// The real kubectl run by a test against its API server (commgate-sim): the test's own
// kubeconfig, a discovery cache in the test's directory (never ~/.kube, where a later run
// on the same port would read it), --request-timeout=10s, and each call's output (stdout
// and stderr together) in a file of its own there. Not for a call that must outlive the
// request timeout (`get -w`): run that with ChildProcess.
#pragma once

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

namespace commgate::testing {

struct KubectlResult {
  int code;  // the exit status; -1 when it did not exit within the timeout (it is then killed)
  std::string output;
};

class Kubectl {
 public:
  Kubectl() = default;  // assigned before use (in a fixture's SetUp)
  // `program`: kubectl's path; `kubeconfig`: the file it reads; `dir`: where its cache and
  // output files go; `timeout`: how long one call may take.
  Kubectl(std::string program, std::filesystem::path kubeconfig, std::filesystem::path dir,
          std::chrono::milliseconds timeout = std::chrono::seconds(20));

  // Writes `kubeconfig_text` (e.g. sim::ApiServer::kubeconfig()) to `dir`/kubeconfig and
  // returns a kubectl that uses it.
  static Kubectl with_kubeconfig(std::string program, const std::filesystem::path& dir,
                                 const std::string& kubeconfig_text,
                                 std::chrono::milliseconds timeout = std::chrono::seconds(20));

  // `kubectl --kubeconfig ... --cache-dir ... --request-timeout=10s <args>`; with `env`
  // ("NAME=value" each), run under /usr/bin/env with those set.
  KubectlResult run(const std::vector<std::string>& args, const std::vector<std::string>& env = {});

  const std::filesystem::path& kubeconfig() const { return kubeconfig_; }

 private:
  std::string program_;
  std::filesystem::path kubeconfig_;
  std::filesystem::path dir_;
  std::chrono::milliseconds timeout_{0};
  int calls_ = 0;
};

}  // namespace commgate::testing
