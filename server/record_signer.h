// HMAC-SHA256 signatures on decision records (core/decision_record.h RecordAuthenticator),
// with a key that only the webhook and the operator can read: the chart's Secret
// <release>-decision-key, mounted into both. docs/security.md "Decision records".
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>

#include "core/decision_record.h"

namespace commgate::server {

// HMAC-SHA256 of `data` under `key`, as 64 lowercase hex digits (OpenSSL).
std::string hmac_sha256_hex(std::string_view key, std::string_view data);

class RecordSigner : public RecordAuthenticator {
 public:
  // The smallest key accepted from a file: 32 bytes, SHA-256's own size (RFC 2104 2).
  static constexpr size_t kMinKeyBytes = 32;

  explicit RecordSigner(std::string key) : key_(std::move(key)) {}
  // The key file's bytes (a trailing newline removed). Throws std::runtime_error naming
  // the path when it cannot be read or holds fewer than kMinKeyBytes bytes.
  static RecordSigner from_file(const std::string& path);

  void sign(DecisionRecord& record, std::string_view subject) const override;
  // In constant time: a signature is not learned byte by byte from timing.
  bool verifies(const DecisionRecord& record, std::string_view subject) const override;

 private:
  std::string key_;
};

}  // namespace commgate::server
