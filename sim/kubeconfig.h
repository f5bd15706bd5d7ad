// The kubeconfig the sim writes for kubectl and commgate: one cluster (server URL and the
// CA, base64), one user with the bearer token, one current context.
#pragma once

#include <string>

namespace commgate::sim {

// `user` names the kubeconfig's user entry; `ns` is the context's namespace.
std::string kubeconfig_yaml(const std::string& server_url, const std::string& ca_pem,
                            const std::string& token,
                            const std::string& user = "commgate-sim-admin",
                            const std::string& ns = "default");

// The namespace a user's kubeconfig context defaults to: a service account's own
// (`system:serviceaccount:<ns>:<name>`, as in-cluster clients read it), else "default".
std::string default_namespace_of(const std::string& username);

}  // namespace commgate::sim
