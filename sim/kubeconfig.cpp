#include "sim/kubeconfig.h"

#include "core/base64.h"

namespace commgate::sim {

std::string kubeconfig_yaml(const std::string& server_url, const std::string& ca_pem,
                            const std::string& token) {
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
         "- name: commgate-sim-admin\n"
         "  user:\n"
         "    token: " +
         token +
         "\n"
         "contexts:\n"
         "- name: commgate-sim\n"
         "  context:\n"
         "    cluster: commgate-sim\n"
         "    user: commgate-sim-admin\n"
         "    namespace: default\n"
         "current-context: commgate-sim\n";
}

}  // namespace commgate::sim
