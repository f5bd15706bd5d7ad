#include "server/tls_store.h"

#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <sys/stat.h>

#include <ctime>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace commgate::server::detail {

namespace ssl = boost::asio::ssl;

namespace {

// Mozilla "intermediate" TLS 1.2 suites; TLS 1.3 keeps OpenSSL's defaults.
constexpr const char* kTls12Ciphers =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
    "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
    "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";

bool read_file(const std::string& path, std::string& out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream ss;
  ss << in.rdbuf();
  out = ss.str();
  return static_cast<bool>(in) || in.eof();
}

// The leaf certificate's notAfter of a built context, in Unix seconds (0 if unreadable).
int64_t not_after_of(ssl::context& ctx) {
  const X509* leaf = SSL_CTX_get0_certificate(ctx.native_handle());
  std::tm tm{};
  if (leaf == nullptr || ASN1_TIME_to_tm(X509_get0_notAfter(leaf), &tm) != 1) return 0;
  return static_cast<int64_t>(timegm(&tm));
}

}  // namespace

TlsStore::TlsStore(TlsFiles files, Logger log) : files_(std::move(files)), log_(std::move(log)) {}

bool TlsStore::stat_file(const std::string& path, FileSig& sig) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return false;
  sig.dev = st.st_dev;
  sig.ino = st.st_ino;
  sig.size = st.st_size;
  sig.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
  return true;
}

std::shared_ptr<ssl::context> TlsStore::build(const std::string& cert_pem,
                                              const std::string& key_pem) const {
  auto ctx = std::make_shared<ssl::context>(ssl::context::tls_server);
  ctx->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                   ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1 |
                   ssl::context::single_dh_use | SSL_OP_NO_RENEGOTIATION);
  SSL_CTX* native = ctx->native_handle();
  SSL_CTX_set_min_proto_version(native, TLS1_2_VERSION);
  SSL_CTX_set_cipher_list(native, kTls12Ciphers);
  // Idle keep-alive connections and quiet watches give their TLS buffers back.
  SSL_CTX_set_mode(native, SSL_MODE_RELEASE_BUFFERS);
  ctx->use_certificate_chain(boost::asio::buffer(cert_pem));
  ctx->use_private_key(boost::asio::buffer(key_pem), ssl::context::pem);
  if (SSL_CTX_check_private_key(native) != 1) {
    throw std::runtime_error("private key does not match the certificate");
  }
  return ctx;
}

void TlsStore::load_initial() {
  std::lock_guard lock(poll_mu_);
  std::string cert, key;
  if (!stat_file(files_.cert_file, cert_sig_) || !read_file(files_.cert_file, cert)) {
    throw std::runtime_error("cannot read TLS certificate file " + files_.cert_file);
  }
  if (!stat_file(files_.key_file, key_sig_) || !read_file(files_.key_file, key)) {
    throw std::runtime_error("cannot read TLS private key file " + files_.key_file);
  }
  try {
    auto ctx = build(cert, key);
    std::lock_guard ctx_lock(mu_);
    ctx_ = std::move(ctx);
  } catch (const std::exception& e) {
    throw std::runtime_error("cannot load TLS pair " + files_.cert_file + " / " + files_.key_file +
                             ": " + e.what());
  }
}

std::shared_ptr<ssl::context> TlsStore::current() const {
  std::lock_guard lock(mu_);
  return ctx_;
}

int64_t TlsStore::certificate_not_after() const {
  const auto ctx = current();
  return ctx ? not_after_of(*ctx) : 0;
}

TlsStore::PollResult TlsStore::poll() {
  std::lock_guard lock(poll_mu_);
  FileSig cert_sig, key_sig;
  if (!stat_file(files_.cert_file, cert_sig) || !stat_file(files_.key_file, key_sig)) {
    return PollResult::kUnchanged;  // mid-rotation (a file briefly missing): look again later
  }
  if (cert_sig == cert_sig_ && key_sig == key_sig_) return PollResult::kUnchanged;
  std::string cert, key;
  if (!read_file(files_.cert_file, cert) || !read_file(files_.key_file, key)) {
    return PollResult::kUnchanged;
  }
  FileSig cert_after, key_after;
  if (!stat_file(files_.cert_file, cert_after) || !stat_file(files_.key_file, key_after) ||
      !(cert_after == cert_sig) || !(key_after == key_sig)) {
    return PollResult::kUnchanged;  // changed while being read: next poll
  }
  cert_sig_ = cert_sig;
  key_sig_ = key_sig;
  try {
    auto ctx = build(cert, key);
    std::lock_guard ctx_lock(mu_);
    ctx_ = std::move(ctx);
  } catch (const std::exception& e) {
    log_.error("TLS reload rejected, keeping the previous certificate: " + files_.cert_file +
               " / " + files_.key_file + ": " + e.what());
    return PollResult::kRejected;
  }
  log_.info("TLS certificate reloaded from " + files_.cert_file);
  return PollResult::kReloaded;
}

}  // namespace commgate::server::detail
