#include "sim/pki.h"

#include <chrono>
#include <random>

#include "server/pki.h"

namespace commgate::sim {

ServingPki make_serving_pki() {
  // Random serials: a client that cached an earlier run's CA must not mistake ours for it.
  std::random_device random;
  auto serial = [&] { return static_cast<long>(random() >> 1); };
  const std::chrono::seconds year(365L * 86400);
  server::CertificateAuthority ca("commgate-sim CA", serial(), year);
  server::IssuedCertificate serving =
      ca.issue_serving_cert("commgate-sim apiserver", serial(), year);
  return {ca.cert_pem(), serving.cert_pem, serving.key_pem};
}

}  // namespace commgate::sim
