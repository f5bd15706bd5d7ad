// The kubeconfig the sim writes for kubectl and commgate: one cluster (server URL and the
// CA, base64), one user with the bearer token, one current context.
#pragma once

#include <string>

namespace commgate::sim {

std::string kubeconfig_yaml(const std::string& server_url, const std::string& ca_pem,
                            const std::string& token);

}  // namespace commgate::sim
