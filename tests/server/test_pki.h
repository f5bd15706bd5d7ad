// A throwaway CA and server certificates, made with OpenSSL's C API in a temp dir at test
// time (no private key is ever committed).
#pragma once

#include <chrono>
#include <filesystem>
#include <string>

namespace commgate::server::testing {

// How long the CA and the certificates it issues are valid: a day, long enough for any
// test, short if one ever leaks.
inline constexpr std::chrono::seconds kTestPkiValidity{86400};

class TestPki {
 public:
  TestPki();  // a fresh temp dir and CA
  ~TestPki();
  TestPki(const TestPki&) = delete;
  TestPki& operator=(const TestPki&) = delete;

  const std::filesystem::path& dir() const { return dir_; }
  std::string ca_file() const { return (dir_ / "ca.crt").string(); }
  std::string cert_file() const { return (dir_ / "tls.crt").string(); }
  std::string key_file() const { return (dir_ / "tls.key").string(); }

  // Issues a server certificate for 127.0.0.1 / localhost with this serial, signed by the
  // CA, and writes cert then key, each by rename (as a Secret volume update does).
  void issue_server_cert(long serial);

 private:
  std::filesystem::path dir_;
  struct Ca;
  Ca* ca_;
};

// Writes `content` to `path` through a temp file and rename.
void write_file_atomically(const std::string& path, const std::string& content);

}  // namespace commgate::server::testing
