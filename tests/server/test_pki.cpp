#include "tests/server/test_pki.h"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <unistd.h>

#include <fstream>
#include <stdexcept>

namespace commgate::server::testing {

namespace {

void check(bool ok, const char* what) {
  if (!ok) throw std::runtime_error(std::string("openssl: ") + what);
}

EVP_PKEY* make_key() {
  EVP_PKEY* key = EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256");
  check(key != nullptr, "keygen");
  return key;
}

void add_ext(X509* cert, X509V3_CTX* ctx, int nid, const char* value) {
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, ctx, nid, value);
  check(ext != nullptr, "extension");
  X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
}

X509* make_cert(EVP_PKEY* key, X509* issuer, EVP_PKEY* issuer_key, long serial, const char* cn,
                bool ca) {
  X509* x = X509_new();
  check(x != nullptr, "X509_new");
  X509_set_version(x, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(x), serial);
  X509_gmtime_adj(X509_getm_notBefore(x), -3600);
  X509_gmtime_adj(X509_getm_notAfter(x), 86400);
  X509_set_pubkey(x, key);
  X509_NAME* name = X509_get_subject_name(x);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(cn),
                             -1, -1, 0);
  X509_set_issuer_name(x, issuer != nullptr ? X509_get_subject_name(issuer) : name);
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer != nullptr ? issuer : x, x, nullptr, nullptr, 0);
  if (ca) {
    add_ext(x, &ctx, NID_basic_constraints, "critical,CA:TRUE");
    add_ext(x, &ctx, NID_key_usage, "critical,keyCertSign,cRLSign");
    add_ext(x, &ctx, NID_subject_key_identifier, "hash");
  } else {
    add_ext(x, &ctx, NID_basic_constraints, "CA:FALSE");
    add_ext(x, &ctx, NID_key_usage, "critical,digitalSignature,keyEncipherment");
    add_ext(x, &ctx, NID_ext_key_usage, "serverAuth");
    add_ext(x, &ctx, NID_subject_alt_name, "IP:127.0.0.1,DNS:localhost");
  }
  check(X509_sign(x, issuer_key, EVP_sha256()) > 0, "X509_sign");
  return x;
}

std::string bio_string(BIO* bio) {
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio, &data);
  return std::string(data, static_cast<size_t>(n));
}

std::string cert_pem(X509* x) {
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_X509(bio, x);
  std::string s = bio_string(bio);
  BIO_free(bio);
  return s;
}

std::string key_pem(EVP_PKEY* k) {
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_PrivateKey(bio, k, nullptr, nullptr, 0, nullptr, nullptr);
  std::string s = bio_string(bio);
  BIO_free(bio);
  return s;
}

}  // namespace

struct TestPki::Ca {
  EVP_PKEY* key = nullptr;
  X509* cert = nullptr;
};

void write_file_atomically(const std::string& path, const std::string& content) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << content;
    if (!out) throw std::runtime_error("cannot write " + tmp);
  }
  std::filesystem::rename(tmp, path);
}

TestPki::TestPki() : ca_(new Ca) {
  std::string templ = (std::filesystem::temp_directory_path() / "commgate-pki-XXXXXX").string();
  check(mkdtemp(templ.data()) != nullptr, "mkdtemp");
  dir_ = templ;
  ca_->key = make_key();
  ca_->cert = make_cert(ca_->key, nullptr, ca_->key, 1, "commgate test CA", true);
  write_file_atomically(ca_file(), cert_pem(ca_->cert));
}

TestPki::~TestPki() {
  X509_free(ca_->cert);
  EVP_PKEY_free(ca_->key);
  delete ca_;
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

void TestPki::issue_server_cert(long serial) {
  EVP_PKEY* key = make_key();
  X509* cert = make_cert(key, ca_->cert, ca_->key, serial, "commgate test server", false);
  const std::string c = cert_pem(cert), k = key_pem(key);
  X509_free(cert);
  EVP_PKEY_free(key);
  write_file_atomically(cert_file(), c);
  write_file_atomically(key_file(), k);
}

}  // namespace commgate::server::testing
