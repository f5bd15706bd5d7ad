// commgate-open-loop: a fixed-rate HTTPS load generator that measures latency from each
// request's *scheduled* send time, so a server that stalls is charged for every request
// that should have gone out meanwhile (no coordinated omission; wrk measures from the
// actual send and cannot do this).
//
//   commgate-open-loop --port P --path /mutate --body-file F --rate R [--connections 8]
//                      [--duration-s 5] [--warmup-s 1] [--method POST] [--server-pid PID,...]
//
// Request k is due at t0 + k/R and goes on connection k mod C (keep-alive, one request in
// flight per connection, as an API server's client does). A connection that is still
// waiting for an earlier answer sends late, and that lateness counts. Prints one line:
// achieved rate, p50/p90/p99/p99.9/max in microseconds, errors, and with --server-pid the
// server's CPU time per request (utime+stime from /proc, over the measured window).
// TLS is not verified: loopback benchmark only.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
namespace ssl = net::ssl;
using Clock = std::chrono::steady_clock;

struct Options {
  uint16_t port = 0;
  std::string path = "/mutate";
  std::string method = "POST";
  std::string body;
  double rate = 1000;
  int connections = 8;
  double duration_s = 5;
  double warmup_s = 1;
  std::vector<int> server_pids;  // CPU is summed over these (nginx: its workers)
};

// utime + stime of a process in seconds (fields 14 and 15 of /proc/PID/stat).
double cpu_seconds_of(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::stringstream content;
  content << in.rdbuf();
  const std::string stat = content.str();
  const auto close_paren = stat.rfind(')');
  if (close_paren == std::string::npos) return 0;
  std::istringstream rest(stat.substr(close_paren + 2));
  std::string field;
  unsigned long long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i == 14) utime = std::stoull(field);
    if (i == 15) stime = std::stoull(field);
  }
  return static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

double cpu_seconds(const std::vector<int>& pids) {
  double total = 0;
  for (int pid : pids) total += cpu_seconds_of(pid);
  return total;
}

struct ConnectionResult {
  std::vector<double> latencies_us;  // measured window only
  uint64_t errors = 0;
  std::string first_error;
};

// One keep-alive connection sending requests k = index, index + C, ... on schedule.
void run_connection(const Options& o, int index, Clock::time_point t0, uint64_t total,
                    uint64_t warmup_requests, ConnectionResult& result) {
  try {
    net::io_context ioc;
    ssl::context ctx(ssl::context::tls_client);
    ctx.set_verify_mode(ssl::verify_none);
    beast::ssl_stream<beast::tcp_stream> stream(ioc, ctx);
    net::ip::tcp::resolver resolver(ioc);
    beast::get_lowest_layer(stream).connect(resolver.resolve("127.0.0.1", std::to_string(o.port)));
    stream.handshake(ssl::stream_base::client);
    http::request<http::string_body> req{http::string_to_verb(o.method), o.path, 11};
    req.set(http::field::host, "127.0.0.1");
    req.set(http::field::content_type, "application/json");
    req.body() = o.body;
    req.prepare_payload();
    beast::flat_buffer buffer;
    const auto interval = std::chrono::duration<double>(1.0 / o.rate);
    for (uint64_t k = static_cast<uint64_t>(index); k < total;
         k += static_cast<uint64_t>(o.connections)) {
      const auto due =
          t0 + std::chrono::duration_cast<Clock::duration>(interval * static_cast<double>(k));
      std::this_thread::sleep_until(due);
      http::write(stream, req);
      http::response<http::string_body> res;
      http::read(stream, buffer, res);
      const double us = std::chrono::duration<double, std::micro>(Clock::now() - due).count();
      if (res.result_int() != 200) {
        if (result.errors++ == 0) result.first_error = "status " + std::to_string(res.result_int());
      } else if (k >= warmup_requests) {
        result.latencies_us.push_back(us);
      }
    }
  } catch (const std::exception& e) {
    if (result.errors++ == 0) result.first_error = e.what();
  }
}

double percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  const auto i = static_cast<std::size_t>(p / 100.0 * static_cast<double>(sorted.size() - 1));
  return sorted[i];
}

int usage() {
  std::cerr << "usage: commgate-open-loop --port P --body-file F --rate R [--path /mutate] "
               "[--method POST] [--connections 8] [--duration-s 5] [--warmup-s 1] "
               "[--server-pid PID[,PID...]]\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--port") {
      o.port = static_cast<uint16_t>(std::stoi(value));
    } else if (flag == "--path") {
      o.path = value;
    } else if (flag == "--method") {
      o.method = value;
    } else if (flag == "--body-file") {
      std::ifstream in(value, std::ios::binary);
      if (!in) {
        std::cerr << "commgate-open-loop: cannot read " << value << "\n";
        return 2;
      }
      std::stringstream content;
      content << in.rdbuf();
      o.body = content.str();
    } else if (flag == "--rate") {
      o.rate = std::stod(value);
    } else if (flag == "--connections") {
      o.connections = std::stoi(value);
    } else if (flag == "--duration-s") {
      o.duration_s = std::stod(value);
    } else if (flag == "--warmup-s") {
      o.warmup_s = std::stod(value);
    } else if (flag == "--server-pid") {  // one pid or a comma-separated list
      std::stringstream list(value);
      for (std::string pid; std::getline(list, pid, ',');) o.server_pids.push_back(std::stoi(pid));
    } else {
      return usage();
    }
  }
  if (o.port == 0 || o.rate <= 0 || o.connections <= 0 || o.duration_s <= 0) return usage();

  const auto warmup_requests = static_cast<uint64_t>(o.rate * o.warmup_s);
  const auto total = warmup_requests + static_cast<uint64_t>(o.rate * o.duration_s);
  // Start after every connection has had time to connect and handshake.
  const auto t0 = Clock::now() + std::chrono::milliseconds(200);
  const auto measured_start =
      t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.warmup_s));
  std::vector<ConnectionResult> results(static_cast<std::size_t>(o.connections));
  std::vector<std::thread> threads;
  for (int c = 0; c < o.connections; ++c)
    threads.emplace_back(run_connection, std::cref(o), c, t0, total, warmup_requests,
                         std::ref(results[static_cast<std::size_t>(c)]));
  std::this_thread::sleep_until(measured_start);
  const double cpu0 = cpu_seconds(o.server_pids);
  for (auto& t : threads) t.join();
  const double cpu1 = cpu_seconds(o.server_pids);
  const double window_s = std::chrono::duration<double>(Clock::now() - measured_start).count();

  std::vector<double> all;
  uint64_t errors = 0;
  std::string first_error;
  for (auto& r : results) {
    all.insert(all.end(), r.latencies_us.begin(), r.latencies_us.end());
    if (r.errors && first_error.empty()) first_error = r.first_error;
    errors += r.errors;
  }
  std::sort(all.begin(), all.end());
  std::printf(
      "rate %.0f/s achieved %.0f/s  p50 %.0f us  p90 %.0f us  p99 %.0f us  p99.9 %.0f us  "
      "max %.0f us  errors %llu",
      o.rate, static_cast<double>(all.size()) / window_s, percentile(all, 50), percentile(all, 90),
      percentile(all, 99), percentile(all, 99.9), all.empty() ? 0.0 : all.back(),
      static_cast<unsigned long long>(errors));
  if (!o.server_pids.empty() && !all.empty())
    std::printf("  server CPU %.1f us/request",
                (cpu1 - cpu0) * 1e6 / static_cast<double>(all.size()));
  std::printf("\n");
  if (!first_error.empty()) std::fprintf(stderr, "first error: %s\n", first_error.c_str());
  return errors == 0 ? 0 : 1;
}
