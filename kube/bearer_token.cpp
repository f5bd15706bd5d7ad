#include "kube/bearer_token.h"

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace commgate::kube {

std::string read_token_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot read the token file");
  std::ostringstream text;
  text << in.rdbuf();
  std::string token = text.str();
  const auto first = token.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) throw std::runtime_error(path + ": the token file is empty");
  const auto last = token.find_last_not_of(" \t\r\n");
  return token.substr(first, last - first + 1);
}

BearerToken BearerToken::fixed(std::string token) {
  BearerToken t;
  t.token_ = std::move(token);
  return t;
}

BearerToken BearerToken::from_file(std::string path, std::function<Clock::time_point()> clock) {
  BearerToken t;
  t.clock_ = std::move(clock);
  t.token_ = read_token_file(path);
  t.file_ = std::move(path);
  t.read_at_ = t.now();
  return t;
}

BearerToken::BearerToken(const BearerToken& other) {
  std::lock_guard lock(other.mu_);
  file_ = other.file_;
  token_ = other.token_;
  read_at_ = other.read_at_;
  clock_ = other.clock_;
}

BearerToken& BearerToken::operator=(const BearerToken& other) {
  if (this == &other) return *this;
  std::scoped_lock lock(mu_, other.mu_);
  file_ = other.file_;
  token_ = other.token_;
  read_at_ = other.read_at_;
  clock_ = other.clock_;
  return *this;
}

bool BearerToken::empty() const {
  std::lock_guard lock(mu_);
  return token_.empty() && file_.empty();
}

std::string BearerToken::current() {
  std::lock_guard lock(mu_);
  if (!file_.empty() && now() - read_at_ >= kRereadAfter) {
    try {
      token_ = read_token_file(file_);
    } catch (const std::exception&) {
      // Keep the last token; see the header.
    }
    read_at_ = now();
  }
  return token_;
}

}  // namespace commgate::kube
