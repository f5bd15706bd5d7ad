// commgate-server-bench: the shared HTTPS server answering a static body, for the side by
// side comparison with nginx in bench/server/run.sh. Runs until SIGINT or SIGTERM.
//
//   commgate-server-bench --cert F --key F --body-file F [--port N] [--threads N]
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "server/server.h"

namespace {

int usage() {
  std::cerr << "usage: commgate-server-bench --cert F --key F --body-file F [--port N] "
               "[--threads N]\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  using commgate::server::Request;
  using commgate::server::Response;
  std::string cert, key, body_file;
  int port = 0, threads = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--cert") {
      cert = value;
    } else if (flag == "--key") {
      key = value;
    } else if (flag == "--body-file") {
      body_file = value;
    } else if (flag == "--port") {
      port = std::atoi(value.c_str());
    } else if (flag == "--threads") {
      threads = std::atoi(value.c_str());
    } else {
      return usage();
    }
  }
  if (cert.empty() || key.empty() || body_file.empty()) return usage();
  std::ifstream in(body_file, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string body = ss.str();

  // Block the stop signals before the server's threads exist; main waits for them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  commgate::server::Router router;
  router.get("/static.json", [&body](const Request&) { return Response::json(200, body); });
  router.post("/echo", [](const Request& r) { return Response::json(200, r.body); });
  commgate::server::ServerOptions opts;
  opts.port = static_cast<uint16_t>(port);
  opts.threads = threads;
  opts.tls = commgate::server::TlsFiles{cert, key};
  commgate::server::Server server(std::move(opts), std::move(router));
  try {
    server.start();
  } catch (const std::exception& e) {
    std::cerr << "commgate-server-bench: " << e.what() << "\n";
    return 1;
  }
  std::cout << "listening on 127.0.0.1:" << server.port() << std::endl;
  int sig = 0;
  sigwait(&stop_signals, &sig);
  server.stop();
  const auto s = server.stats();
  std::cout << "served " << s.requests << " responses on " << s.connections_accepted
            << " connections\n";
  return 0;
}
