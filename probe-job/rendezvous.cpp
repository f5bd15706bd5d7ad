#include "probe-job/rendezvous.h"

#include <c10/util/Exception.h>

#include <torch/csrc/distributed/c10d/TCPStore.hpp>

namespace commgate::probe {
namespace {

std::string first_line(const std::string& text) {
  auto nl = text.find('\n');
  return nl == std::string::npos ? text : text.substr(0, nl);
}

std::string seconds_text(std::chrono::milliseconds d) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0fs", static_cast<double>(d.count()) / 1000.0);
  return buf;
}

std::string rank_key(int r) {
  return "commgate/joined/" + std::to_string(r);
}

}  // namespace

std::string exception_text(const std::exception& e) {
  if (auto* c10 = dynamic_cast<const c10::Error*>(&e))
    return first_line(c10->what_without_backtrace());
  return first_line(e.what());
}

c10::intrusive_ptr<c10d::Store> connect_tcp_store(const std::string& master_addr, int master_port,
                                                  int rank, int world_size,
                                                  std::chrono::milliseconds timeout) {
  c10d::TCPStoreOptions opts;
  opts.port = static_cast<std::uint16_t>(master_port);
  opts.isServer = rank == 0;
  opts.numWorkers = world_size;
  opts.waitWorkers = false;  // join_world waits, with a better error
  opts.timeout = timeout;
  const std::string where = master_addr + ":" + std::to_string(master_port);
  try {
    return c10::make_intrusive<c10d::TCPStore>(master_addr, opts);
  } catch (const std::exception& e) {
    if (rank == 0) {
      throw RendezvousError("rank 0 could not serve the store on port " +
                            std::to_string(master_port) + " or reach it at " + where +
                            " (MASTER_ADDR:MASTER_PORT): " + exception_text(e));
    }
    throw RendezvousError("rank " + std::to_string(rank) + " could not connect to the store at " +
                          where + " (MASTER_ADDR:MASTER_PORT) within " + seconds_text(timeout) +
                          ": " + exception_text(e));
  }
}

RendezvousInfo join_world(c10d::Store& store, const std::string& where, int rank, int world_size,
                          const std::string& hostname, std::chrono::milliseconds timeout) {
  std::vector<std::string> keys;
  for (int r = 0; r < world_size; ++r) keys.push_back(rank_key(r));
  try {
    store.set(rank_key(rank), std::vector<uint8_t>(hostname.begin(), hostname.end()));
    store.wait(keys, timeout);
  } catch (const std::exception& e) {
    std::string missing;
    int joined = 0;
    try {
      for (int r = 0; r < world_size; ++r) {
        if (store.check({rank_key(r)})) {
          ++joined;
        } else {
          missing += (missing.empty() ? "" : ", ") + std::to_string(r);
        }
      }
    } catch (const std::exception&) {
      missing = "unknown (the store stopped answering)";
    }
    if (missing.empty()) {
      throw RendezvousError("rendezvous at " + where +
                            ": waiting for the ranks to join failed: " + exception_text(e));
    }
    throw RendezvousError("rendezvous at " + where + ": timed out after " + seconds_text(timeout) +
                          " waiting for rank(s) " + missing + " to join (" +
                          std::to_string(joined) + " of " + std::to_string(world_size) +
                          " joined)");
  }
  RendezvousInfo info;
  for (int r = 0; r < world_size; ++r) {
    auto bytes = store.get(rank_key(r));
    info.hostnames.emplace_back(bytes.begin(), bytes.end());
  }
  return info;
}

}  // namespace commgate::probe
