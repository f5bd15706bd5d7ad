// The simulated API server: an ObjectStore behind ApiHandlers on the project's HTTPS
// server, with a CA and serving certificate made at start and a kubeconfig to match.
// Usable in process by tests (port 0) and by the commgate-sim binary.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "sim/api_handlers.h"
#include "sim/object_store.h"
#include "sim/pki.h"

namespace commgate::server {
class Server;
}

namespace commgate::sim {

struct ApiServerOptions {
  uint16_t port = 0;  // 0: any free port
  std::string token;  // "": a random one
  std::size_t history_limit = 10'000;
  std::chrono::milliseconds bookmark_interval{60'000};  // kube-apiserver: about a minute
  std::chrono::milliseconds tick_interval{100};         // watch timeouts are this precise
};

class ApiServer {
 public:
  explicit ApiServer(ApiServerOptions options = {});
  ~ApiServer();  // stop()
  ApiServer(const ApiServer&) = delete;
  ApiServer& operator=(const ApiServer&) = delete;

  // Throws std::runtime_error when it cannot listen.
  void start();
  void stop();

  uint16_t port() const;
  std::string url() const;  // https://127.0.0.1:PORT
  const std::string& token() const { return token_; }
  const std::string& ca_pem() const { return pki_.ca_pem; }
  std::string kubeconfig() const;
  // The directory holding ca.crt (and the serving pair the server reads).
  const std::string& pki_dir() const { return dir_; }
  ObjectStore& store() { return store_; }
  std::size_t open_watches() const { return handlers_.open_watches(); }

 private:
  void ticker();

  ApiServerOptions options_;
  std::string token_;
  ServingPki pki_;
  std::string dir_;
  ObjectStore store_;
  ApiHandlers handlers_;
  std::unique_ptr<server::Server> server_;
  std::thread ticker_;
  std::mutex tick_mu_;
  std::condition_variable tick_cv_;
  bool stopping_ = false;
};

}  // namespace commgate::sim
