// Rendezvous through a c10d Store (TCPStore in production, HashStore in tests): every rank
// announces itself, then waits, with a deadline, until all WORLD_SIZE ranks have. Errors
// name the store's address and what was waited for.
#pragma once

#include <chrono>
#include <stdexcept>
#include <string>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <vector>

namespace commgate::probe {

// The first line of an exception's message, without c10's backtrace.
std::string exception_text(const std::exception& e);

class RendezvousError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct RendezvousInfo {
  std::vector<std::string> hostnames;  // by rank
};

// Connects to (rank 0: serves) the TCP store at master_addr:master_port, trying until
// `timeout`. Throws RendezvousError.
c10::intrusive_ptr<c10d::Store> connect_tcp_store(const std::string& master_addr, int master_port,
                                                  int rank, int world_size,
                                                  std::chrono::milliseconds timeout);

// Announces `rank` (with its hostname) and waits until all ranks have announced
// themselves. `where` names the store in errors ("198.18.0.1:29500"). Throws
// RendezvousError listing the ranks that did not join.
RendezvousInfo join_world(c10d::Store& store, const std::string& where, int rank, int world_size,
                          const std::string& hostname, std::chrono::milliseconds timeout);

}  // namespace commgate::probe
