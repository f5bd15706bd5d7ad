#include "server/record_signer.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <fstream>
#include <iterator>
#include <stdexcept>

namespace commgate::server {

std::string hmac_sha256_hex(std::string_view key, std::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (!HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
            reinterpret_cast<const unsigned char*>(data.data()), data.size(), digest, &length))
    throw std::runtime_error("HMAC-SHA256 failed");
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * length);
  for (unsigned int i = 0; i < length; ++i) {
    out += kHex[digest[i] >> 4];
    out += kHex[digest[i] & 0xf];
  }
  return out;
}

RecordSigner RecordSigner::from_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read the decision key file " + path);
  std::string key((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!key.empty() && (key.back() == '\n' || key.back() == '\r')) key.pop_back();
  if (key.size() < kMinKeyBytes) {
    throw std::runtime_error("the decision key file " + path + " holds " +
                             std::to_string(key.size()) + " bytes; at least " +
                             std::to_string(kMinKeyBytes) + " are needed");
  }
  return RecordSigner(std::move(key));
}

void RecordSigner::sign(DecisionRecord& record, std::string_view subject) const {
  record.mac = hmac_sha256_hex(key_, record_signing_text(record, subject));
}

bool RecordSigner::verifies(const DecisionRecord& record, std::string_view subject) const {
  const std::string want = hmac_sha256_hex(key_, record_signing_text(record, subject));
  return record.mac.size() == want.size() &&
         CRYPTO_memcmp(record.mac.data(), want.data(), want.size()) == 0;
}

}  // namespace commgate::server
