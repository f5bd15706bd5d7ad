// What the chart's tests on commgate-sim share (chart_sim_test.cpp, chart_rbac_usage_test.cpp,
// chart_deploy_sim_test.cpp): the sim as the chart's test cluster (RBAC on, a token for each
// of the chart's ServiceAccounts), the admin's kubectl (system:masters), the rendered chart
// applied as `helm template | kubectl apply -f -` would, and the shortcuts of the tests
// that run the webhook and the operator themselves: a ServiceAccount's kubeconfig, a
// Secret mounted as files, a container's arguments mapped to this machine.
// Compiled into each of those test binaries (it needs their COMMGATE_KUBECTL and
// COMMGATE_BINARY).
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/api_server.h"
#include "tests/chart/chart_render.h"
#include "tests/support/kubectl.h"

namespace commgate::testing {

inline constexpr const char* kOperatorUser =
    "system:serviceaccount:commgate-system:commgate-operator";
inline constexpr const char* kWebhookUser =
    "system:serviceaccount:commgate-system:commgate-webhook";

// The sim as the chart's test cluster: `--authorization rbac`, with a token for each of the
// chart's ServiceAccounts (operator-sa-token, webhook-sa-token).
sim::ApiServerOptions chart_sim_options();

// A Namespace labelled kubernetes.io/metadata.name, as kube-apiserver labels every one.
nlohmann::json labelled_namespace(const std::string& name);

// A manifest stream of the objects (JSON documents are YAML), as `helm template` prints.
std::string manifest_stream(const std::vector<nlohmann::json>& objects);

// `kubectl apply -f <dir>/<name>.yaml` of the objects as one manifest stream.
KubectlResult apply_objects(Kubectl& kubectl, const std::filesystem::path& dir,
                            const std::vector<nlohmann::json>& objects, const std::string& name);

// A fixture with the sim, the admin's kubectl and the rendered chart. A test's SetUp skips
// without kubectl, then calls start_sim() and render() (with ASSERT_NO_FATAL_FAILURE).
class ChartSimTest : public ::testing::Test {
 protected:
  explicit ChartSimTest(sim::ApiServerOptions options = chart_sim_options());

  // Starts the API server and makes the admin's kubectl (each call up to `kubectl_timeout`).
  void start_sim(std::chrono::milliseconds kubectl_timeout);
  // Renders the chart with chart-render's `args`; fails the test when it does not render.
  void render(const std::vector<std::string>& args);

  using Result = KubectlResult;
  Result kubectl(const std::vector<std::string>& args) { return kubectl_.run(args); }
  Result apply(const std::vector<nlohmann::json>& objects, const std::string& name) {
    return apply_objects(kubectl_, dir_, objects, name);
  }

  // Kueue v0.19.2's CRDs from ../shared/fixtures (ResourceFlavors, AdmissionChecks,
  // ClusterQueues, LocalQueues, Workloads) created with kubectl: `create`, not `apply`, as
  // the Workload CRD is larger than the last-applied annotation may be. Fails the test when
  // one is refused.
  void create_kueue_crds();
  // A kubeconfig with the token of one of the chart's ServiceAccounts (in the pod: the
  // projected token; here the sim's --user token for that name).
  std::string kubeconfig_of(const std::string& username);
  // The chart's Secret `name`: each of its keys as the file its volume would hold, in a
  // directory of their own.
  std::filesystem::path mount_secret(const std::string& name) const;
  // A commgate container's arguments (the webhook's or the operator's) run as the local
  // build: --port=0, the /etc/commgate/tls/ mount mapped to `tls_dir`, the decision key's
  // mount to the chart's decision-key Secret, listening on 127.0.0.1 with `kubeconfig`
  // instead of the in-cluster config.
  std::vector<std::string> local_argv(const nlohmann::json& container,
                                      const std::filesystem::path& tls_dir,
                                      const std::string& kubeconfig) const;

  sim::ApiServer api_;
  std::string dir_;  // the sim's directory: the test's files go there
  Kubectl kubectl_;
  RenderedChart chart_;
};

}  // namespace commgate::testing
