#include "sim/kubeconfig.h"

#include <nlohmann/json.hpp>

#include "core/base64.h"

namespace commgate::sim {

std::string kubeconfig_yaml(const std::string& server_url, const std::string& ca_pem,
                            const std::string& token, const std::string& user,
                            const std::string& ns) {
  // A JSON string is a YAML double-quoted scalar: names with ':' (service accounts) stay
  // one value.
  const std::string user_name = nlohmann::json(user).dump();
  return "apiVersion: v1\n"
         "kind: Config\n"
         "clusters:\n"
         "- name: commgate-sim\n"
         "  cluster:\n"
         "    server: " +
         server_url +
         "\n"
         "    certificate-authority-data: " +
         base64_encode(ca_pem) +
         "\n"
         "users:\n"
         "- name: " +
         user_name +
         "\n"
         "  user:\n"
         "    token: " +
         nlohmann::json(token).dump() +
         "\n"
         "contexts:\n"
         "- name: commgate-sim\n"
         "  context:\n"
         "    cluster: commgate-sim\n"
         "    user: " +
         user_name +
         "\n"
         "    namespace: " +
         ns +
         "\n"
         "current-context: commgate-sim\n";
}

std::string default_namespace_of(const std::string& username) {
  const std::string prefix = "system:serviceaccount:";
  if (username.rfind(prefix, 0) != 0) return "default";
  const std::string rest = username.substr(prefix.size());
  const auto colon = rest.find(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == rest.size()) return "default";
  return rest.substr(0, colon);
}

}  // namespace commgate::sim
