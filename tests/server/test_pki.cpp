#include "tests/server/test_pki.h"

#include <unistd.h>

#include <fstream>
#include <stdexcept>

#include "server/pki.h"

namespace commgate::server::testing {

struct TestPki::Ca {
  CertificateAuthority authority{"commgate test CA", 1, kTestPkiValidity};
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
  if (mkdtemp(templ.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  dir_ = templ;
  write_file_atomically(ca_file(), ca_->authority.cert_pem());
}

TestPki::~TestPki() {
  delete ca_;
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

void TestPki::issue_server_cert(long serial) {
  IssuedCertificate issued =
      ca_->authority.issue_serving_cert("commgate test server", serial, kTestPkiValidity);
  write_file_atomically(cert_file(), issued.cert_pem);
  write_file_atomically(key_file(), issued.key_pem);
}

}  // namespace commgate::server::testing
