// The bearer token a client sends: fixed (a kubeconfig's `token`) or read from a file
// (`tokenFile`, the in-cluster service-account token). Bound service-account tokens
// rotate (the kubelet rewrites the file well before the hour they are valid is over), so
// a file is read again when the copy held is older than a minute, as client-go does.
// Thread-safe: the client's request stage calls current() from any cpprestsdk thread.
#pragma once

#include <chrono>
#include <functional>
#include <mutex>
#include <string>

namespace commgate::kube {

class BearerToken {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::seconds kRereadAfter{60};

  // No token: current() returns "".
  BearerToken() = default;
  static BearerToken fixed(std::string token);
  // Reads the file now; throws std::runtime_error naming the file when it cannot.
  static BearerToken from_file(std::string path, std::function<Clock::time_point()> clock = {});

  BearerToken(const BearerToken& other);
  BearerToken& operator=(const BearerToken& other);

  bool empty() const;
  // The token to send now. A file that cannot be read again keeps the last token (the
  // server then answers 401, which names the problem better than a client-side error).
  std::string current();
  const std::string& file() const { return file_; }

 private:
  Clock::time_point now() const { return clock_ ? clock_() : Clock::now(); }

  mutable std::mutex mu_;
  std::string file_;
  std::string token_;
  Clock::time_point read_at_{};
  std::function<Clock::time_point()> clock_;
};

// Reads a token file: its contents without surrounding whitespace.
std::string read_token_file(const std::string& path);

}  // namespace commgate::kube
