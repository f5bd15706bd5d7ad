#include "sim/kubeconfig.h"

namespace commgate::sim {

std::string base64_encode(const std::string& data) {
  static const char* t = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < data.size(); i += 3) {
    const unsigned n = (static_cast<unsigned char>(data[i]) << 16) |
                       (static_cast<unsigned char>(data[i + 1]) << 8) |
                       static_cast<unsigned char>(data[i + 2]);
    out += t[(n >> 18) & 63];
    out += t[(n >> 12) & 63];
    out += t[(n >> 6) & 63];
    out += t[n & 63];
  }
  if (i + 1 == data.size()) {
    const unsigned n = static_cast<unsigned char>(data[i]) << 16;
    out += t[(n >> 18) & 63];
    out += t[(n >> 12) & 63];
    out += "==";
  } else if (i + 2 == data.size()) {
    const unsigned n = (static_cast<unsigned char>(data[i]) << 16) |
                       (static_cast<unsigned char>(data[i + 1]) << 8);
    out += t[(n >> 18) & 63];
    out += t[(n >> 12) & 63];
    out += t[(n >> 6) & 63];
    out += '=';
  }
  return out;
}

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
