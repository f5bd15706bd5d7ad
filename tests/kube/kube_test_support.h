// Shared by the Kubernetes client tests: waiting for a condition with a deadline (never a
// sleep), a client for an in-process sim, and small object builders.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "kube/api_client.h"
#include "kube/cluster_config.h"
#include "sim/api_server.h"
#include "tests/support/wait.h"

namespace commgate::kube::testing {

using commgate::testing::wait_until;  // tests/support/wait.h

inline ClusterConfig config_for(const sim::ApiServer& api) {
  return parse_kubeconfig(api.kubeconfig(), "", "", "sim kubeconfig");
}

inline std::unique_ptr<ApiClient> client_for(const sim::ApiServer& api) {
  return std::make_unique<ApiClient>(config_for(api));
}

inline nlohmann::json configmap(const std::string& name, const std::string& value,
                                const std::string& ns = "default") {
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata", {{"name", name}, {"namespace", ns}}},
          {"data", {{"k", value}}}};
}

inline sim::ResourceInfo configmaps(sim::ApiServer& api) {
  return *api.store().find_resource("", "v1", "configmaps");
}

constexpr const char* kConfigMaps = "/api/v1/namespaces/default/configmaps";

}  // namespace commgate::kube::testing
