// A certificate authority held in memory, and the serving certificates it issues, made
// with OpenSSL's C API. The simulated API server makes its own at start-up and the tests
// make throwaway ones, so no private key is ever committed.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace commgate::server {

struct IssuedCertificate {
  std::string cert_pem;
  std::string key_pem;
};

// An EC P-256 CA. Every call throws std::runtime_error naming the OpenSSL call that failed.
class CertificateAuthority {
 public:
  CertificateAuthority(const std::string& common_name, long serial, std::chrono::seconds validity);
  ~CertificateAuthority();
  CertificateAuthority(const CertificateAuthority&) = delete;
  CertificateAuthority& operator=(const CertificateAuthority&) = delete;

  std::string cert_pem() const;
  // A serving certificate (serverAuth) for 127.0.0.1 and localhost, and for each of
  // `extra_dns_names` (e.g. "commgate-webhook.commgate-system.svc", the name the API
  // server verifies a webhook service against), with a fresh key.
  IssuedCertificate issue_serving_cert(const std::string& common_name, long serial,
                                       std::chrono::seconds validity,
                                       const std::vector<std::string>& extra_dns_names = {}) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace commgate::server
