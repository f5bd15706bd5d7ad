// The sim's own certificate authority and serving certificate, made at start-up with
// OpenSSL's C API (server/pki.h, as the tests' certificates are): nothing secret is
// ever committed, and the kubeconfig carries the CA so that clients verify the server as
// with a real cluster.
#pragma once

#include <string>

namespace commgate::sim {

struct ServingPki {
  std::string ca_pem;
  std::string cert_pem;  // for 127.0.0.1 and localhost, signed by the CA
  std::string key_pem;
};

// Throws std::runtime_error naming the OpenSSL call that failed.
ServingPki make_serving_pki();

}  // namespace commgate::sim
