// Crossing network namespaces without touching the host's interfaces. Nodes made by
// scripts/netsim.sh live in namespaces joined only to each other, so neither the API server
// (on the host's loopback) nor its clients can reach a pod's 198.18.0.x address, and the
// pods cannot reach the API server. A cluster's node network and kube-proxy give both; the
// sim relays TCP instead: a socket keeps the namespace it was created in, so one process
// holds a listener in one namespace and dials from another.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace commgate::sim {

// Runs `fn` on a thread of its own that entered network namespace `netns`
// (/run/netns/<netns>, as `ip netns` names it) and waits for it; "" runs it on this thread.
// Only sockets `fn` creates are in that namespace. Throws std::system_error naming the
// namespace when it cannot be entered; an exception of `fn` is rethrown here.
void run_in_netns(const std::string& netns, const std::function<void()>& fn);

struct RelayEnd {
  std::string netns;  // "" = this process's own
  std::string host;   // an IPv4 address: "127.0.0.1", "198.18.0.1"
  uint16_t port = 0;  // listening: 0 picks a free one
};

// Listens on `listen` and relays each connection, both ways until either side closes, to
// `connect` dialled from inside its namespace (a connection that cannot be dialled is
// closed at once, as a refused one). Throws std::system_error when it cannot listen.
class NetnsRelay {
 public:
  NetnsRelay(RelayEnd listen, RelayEnd connect);
  ~NetnsRelay();  // closes the listener and every relayed connection
  NetnsRelay(const NetnsRelay&) = delete;
  NetnsRelay& operator=(const NetnsRelay&) = delete;

  uint16_t port() const { return port_; }  // where it listens

 private:
  struct Pump {
    std::thread thread;
    std::atomic<bool> done{false};
  };
  void accept_loop();
  void pump(int a, int b, Pump& self);

  RelayEnd listen_, connect_;
  int listener_ = -1;
  int stop_fd_ = -1;  // an eventfd: readable once the relay is closing
  uint16_t port_ = 0;
  std::mutex mu_;
  std::list<Pump> pumps_;
  std::thread acceptor_;
};

}  // namespace commgate::sim
