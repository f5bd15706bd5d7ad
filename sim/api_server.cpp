#include "sim/api_server.h"

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <stdexcept>

#include "core/server/server.h"
#include "sim/kubeconfig.h"

namespace commgate::sim {
namespace {

std::string random_token() {
  static const char* d = "0123456789abcdef";
  std::random_device rd;
  std::string s;
  for (int i = 0; i < 32; ++i) s += d[rd() % 16];
  return s;
}

void write_file(const std::filesystem::path& path, const std::string& content) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << content;
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

ObjectStore::Options store_options(const ApiServerOptions& o) {
  ObjectStore::Options s;
  s.history_limit = o.history_limit;
  return s;
}

}  // namespace

ApiServer::ApiServer(ApiServerOptions options)
    : options_(options),
      token_(options.token.empty() ? random_token() : options.token),
      pki_(make_serving_pki()),
      store_(store_options(options)),
      handlers_(store_, ApiHandlerOptions{token_, std::chrono::seconds(1800)}) {
  std::string templ = (std::filesystem::temp_directory_path() / "commgate-sim-XXXXXX").string();
  if (mkdtemp(templ.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  dir_ = templ;
  write_file(std::filesystem::path(dir_) / "ca.crt", pki_.ca_pem);
  write_file(std::filesystem::path(dir_) / "tls.crt", pki_.cert_pem);
  write_file(std::filesystem::path(dir_) / "tls.key", pki_.key_pem);
}

ApiServer::~ApiServer() {
  stop();
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

void ApiServer::start() {
  server::ServerOptions so;
  so.port = options_.port;
  so.tls = server::TlsFiles{dir_ + "/tls.crt", dir_ + "/tls.key"};
  so.threads = 2;
  so.shutdown_timeout = std::chrono::milliseconds(2000);
  so.idle_timeout = std::chrono::milliseconds(300'000);
  server::Router router;
  router.add("*", "/*", [this](const server::Request& r) { return handlers_.handle(r); });
  server_ = std::make_unique<server::Server>(std::move(so), std::move(router));
  server_->start();
  stopping_ = false;
  ticker_ = std::thread([this] { ticker(); });
}

void ApiServer::stop() {
  {
    std::lock_guard<std::mutex> lock(tick_mu_);
    stopping_ = true;
  }
  tick_cv_.notify_all();
  if (ticker_.joinable()) ticker_.join();
  if (server_) server_->stop();
}

void ApiServer::ticker() {
  auto next_bookmark = std::chrono::steady_clock::now() + options_.bookmark_interval;
  std::unique_lock<std::mutex> lock(tick_mu_);
  while (!tick_cv_.wait_for(lock, options_.tick_interval, [this] { return stopping_; })) {
    lock.unlock();
    const auto now = std::chrono::steady_clock::now();
    const bool bookmarks = now >= next_bookmark;
    if (bookmarks) next_bookmark = now + options_.bookmark_interval;
    handlers_.tick(bookmarks);
    lock.lock();
  }
}

uint16_t ApiServer::port() const {
  return server_ ? server_->port() : 0;
}

std::string ApiServer::url() const {
  return "https://127.0.0.1:" + std::to_string(port());
}

std::string ApiServer::kubeconfig() const {
  return kubeconfig_yaml(url(), pki_.ca_pem, token_);
}

}  // namespace commgate::sim
