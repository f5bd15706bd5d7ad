#include "server/pki.h"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <stdexcept>

namespace commgate::server {
namespace {

struct KeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
struct CertFree {
  void operator()(X509* x) const { X509_free(x); }
};
struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
using Key = std::unique_ptr<EVP_PKEY, KeyFree>;
using Cert = std::unique_ptr<X509, CertFree>;
using Bio = std::unique_ptr<BIO, BioFree>;

void check(bool ok, const char* what) {
  if (!ok) throw std::runtime_error(std::string("openssl: ") + what + " failed");
}

Key make_key() {
  Key key(EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256"));
  check(key != nullptr, "EVP_PKEY_Q_keygen");
  return key;
}

void add_ext(X509* cert, X509V3_CTX* ctx, int nid, const char* value) {
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, ctx, nid, value);
  check(ext != nullptr, "X509V3_EXT_conf_nid");
  X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
}

// A self-signed CA certificate when `issuer` is null, else a serving certificate.
Cert make_cert(EVP_PKEY* key, X509* issuer, EVP_PKEY* issuer_key, long serial,
               const std::string& cn, std::chrono::seconds validity,
               const std::vector<std::string>& extra_dns_names = {}) {
  const bool ca = issuer == nullptr;
  Cert x(X509_new());
  check(x != nullptr, "X509_new");
  X509_set_version(x.get(), 2);
  ASN1_INTEGER_set(X509_get_serialNumber(x.get()), serial);
  X509_gmtime_adj(X509_getm_notBefore(x.get()), -3600);
  X509_gmtime_adj(X509_getm_notAfter(x.get()), static_cast<long>(validity.count()));
  X509_set_pubkey(x.get(), key);
  X509_NAME* name = X509_get_subject_name(x.get());
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
  X509_set_issuer_name(x.get(), ca ? name : X509_get_subject_name(issuer));
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, ca ? x.get() : issuer, x.get(), nullptr, nullptr, 0);
  if (ca) {
    add_ext(x.get(), &ctx, NID_basic_constraints, "critical,CA:TRUE");
    add_ext(x.get(), &ctx, NID_key_usage, "critical,keyCertSign,cRLSign");
    add_ext(x.get(), &ctx, NID_subject_key_identifier, "hash");
  } else {
    add_ext(x.get(), &ctx, NID_basic_constraints, "CA:FALSE");
    add_ext(x.get(), &ctx, NID_key_usage, "critical,digitalSignature,keyEncipherment");
    add_ext(x.get(), &ctx, NID_ext_key_usage, "serverAuth");
    std::string sans = "IP:127.0.0.1,DNS:localhost";
    for (const auto& dns : extra_dns_names) {
      // A comma would start another entry of the config string: refuse instead.
      if (dns.empty() || dns.find_first_of(", ") != std::string::npos)
        throw std::invalid_argument("invalid DNS name for a certificate: \"" + dns + "\"");
      sans += ",DNS:" + dns;
    }
    add_ext(x.get(), &ctx, NID_subject_alt_name, sans.c_str());
  }
  check(X509_sign(x.get(), issuer_key, EVP_sha256()) > 0, "X509_sign");
  return x;
}

std::string bio_string(BIO* bio) {
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio, &data);
  return std::string(data, static_cast<size_t>(n));
}

std::string cert_to_pem(X509* x) {
  Bio bio(BIO_new(BIO_s_mem()));
  check(bio && PEM_write_bio_X509(bio.get(), x) == 1, "PEM_write_bio_X509");
  return bio_string(bio.get());
}

std::string key_to_pem(EVP_PKEY* k) {
  Bio bio(BIO_new(BIO_s_mem()));
  check(bio && PEM_write_bio_PrivateKey(bio.get(), k, nullptr, nullptr, 0, nullptr, nullptr) == 1,
        "PEM_write_bio_PrivateKey");
  return bio_string(bio.get());
}

}  // namespace

struct CertificateAuthority::Impl {
  Key key;
  Cert cert;
};

CertificateAuthority::CertificateAuthority(const std::string& common_name, long serial,
                                           std::chrono::seconds validity)
    : impl_(std::make_unique<Impl>()) {
  impl_->key = make_key();
  impl_->cert =
      make_cert(impl_->key.get(), nullptr, impl_->key.get(), serial, common_name, validity);
}

CertificateAuthority::~CertificateAuthority() = default;

std::string CertificateAuthority::cert_pem() const {
  return cert_to_pem(impl_->cert.get());
}

IssuedCertificate CertificateAuthority::issue_serving_cert(
    const std::string& common_name, long serial, std::chrono::seconds validity,
    const std::vector<std::string>& extra_dns_names) const {
  Key key = make_key();
  Cert cert = make_cert(key.get(), impl_->cert.get(), impl_->key.get(), serial, common_name,
                        validity, extra_dns_names);
  return {cert_to_pem(cert.get()), key_to_pem(key.get())};
}

}  // namespace commgate::server
