// Internal: the server's TLS context, rebuilt when the PEM files change. Connections take
// a shared_ptr to the context current at accept time, so a swap never disturbs them.
#pragma once

#include <sys/types.h>

#include <boost/asio/ssl/context.hpp>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "server/server.h"

namespace commgate::server::detail {

class TlsStore {
 public:
  TlsStore(TlsFiles files, Logger log);
  // Loads the first pair; throws std::runtime_error naming the file on failure.
  void load_initial();
  std::shared_ptr<boost::asio::ssl::context> current() const;
  // The serving certificate's notAfter in Unix seconds (0 before the first load), read
  // from the current context (a scrape's work, not the accept path's).
  int64_t certificate_not_after() const;
  // Reloads when either file's identity (device, inode, size, mtime) changed since the
  // last attempt. A pair that fails to load is logged once and the old one kept.
  enum class PollResult { kUnchanged, kReloaded, kRejected };
  PollResult poll();

 private:
  struct FileSig {
    dev_t dev = 0;
    ino_t ino = 0;
    off_t size = -1;
    int64_t mtime_ns = 0;
    bool operator==(const FileSig&) const = default;
  };
  static bool stat_file(const std::string& path, FileSig& sig);
  std::shared_ptr<boost::asio::ssl::context> build(const std::string& cert_pem,
                                                   const std::string& key_pem) const;

  const TlsFiles files_;
  const Logger log_;
  std::mutex poll_mu_;  // one poll at a time
  FileSig cert_sig_, key_sig_;
  mutable std::mutex mu_;  // guards ctx_
  std::shared_ptr<boost::asio::ssl::context> ctx_;
};

}  // namespace commgate::server::detail
