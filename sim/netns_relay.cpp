#include "sim/netns_relay.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <exception>
#include <system_error>

namespace commgate::sim {

namespace {

std::system_error sys_error(const std::string& what) {
  return std::system_error(errno, std::generic_category(), what);
}

sockaddr_in ipv4(const RelayEnd& end) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(end.port);
  if (inet_pton(AF_INET, end.host.c_str(), &addr.sin_addr) != 1)
    throw std::system_error(EINVAL, std::generic_category(),
                            "relay address \"" + end.host + "\" is not an IPv4 address");
  return addr;
}

std::string where(const RelayEnd& end) {
  return end.host + ":" + std::to_string(end.port) +
         (end.netns.empty() ? "" : " in netns " + end.netns);
}

// A TCP connection to `end` from inside its namespace, or -1 (refused, unreachable, or no
// answer within 3 s).
int dial(const RelayEnd& end) {
  int fd = -1;
  run_in_netns(end.netns, [&] { fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0); });
  if (fd < 0) return -1;
  const sockaddr_in addr = ipv4(end);
  const int flags = fcntl(fd, F_GETFL);
  fcntl(fd, F_SETFL, flags | O_NONBLOCK);
  int rc = connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
  if (rc < 0 && errno == EINPROGRESS) {
    pollfd p{fd, POLLOUT, 0};
    int error = ETIMEDOUT;
    socklen_t len = sizeof error;
    if (poll(&p, 1, 3000) == 1) getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &len);
    rc = error == 0 ? 0 : -1;
  }
  if (rc < 0) {
    close(fd);
    return -1;
  }
  fcntl(fd, F_SETFL, flags);
  return fd;
}

bool write_all(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    const ssize_t n = send(fd, data, size, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

}  // namespace

void run_in_netns(const std::string& netns, const std::function<void()>& fn) {
  if (netns.empty()) {
    fn();
    return;
  }
  const std::string path = "/run/netns/" + netns;
  const int ns = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (ns < 0) throw sys_error("netns " + netns + ": open " + path);
  std::exception_ptr failure;
  int entered = 0;
  // A thread of its own: setns(CLONE_NEWNET) moves only the calling thread, which then
  // ends, so no other work of this process runs in the namespace by accident.
  std::thread([&] {
    if (setns(ns, CLONE_NEWNET) != 0) {
      entered = errno;
      return;
    }
    try {
      fn();
    } catch (...) {
      failure = std::current_exception();
    }
  }).join();
  close(ns);
  if (entered != 0)
    throw std::system_error(entered, std::generic_category(), "netns " + netns + ": setns");
  if (failure) std::rethrow_exception(failure);
}

NetnsRelay::NetnsRelay(RelayEnd listen, RelayEnd connect)
    : listen_(std::move(listen)), connect_(std::move(connect)) {
  const sockaddr_in addr = ipv4(listen_);
  int error = 0;
  run_in_netns(listen_.netns, [&] {
    listener_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (listener_ < 0) {
      error = errno;
      return;
    }
    const int one = 1;
    setsockopt(listener_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(listener_, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0 ||
        ::listen(listener_, 64) != 0)
      error = errno;
  });
  if (error != 0) {
    if (listener_ >= 0) close(listener_);
    throw std::system_error(error, std::generic_category(), "relay: listen on " + where(listen_));
  }
  sockaddr_in bound{};
  socklen_t len = sizeof bound;
  getsockname(listener_, reinterpret_cast<sockaddr*>(&bound), &len);
  port_ = ntohs(bound.sin_port);
  listen_.port = port_;
  stop_fd_ = eventfd(0, EFD_CLOEXEC);
  acceptor_ = std::thread([this] { accept_loop(); });
}

NetnsRelay::~NetnsRelay() {
  const uint64_t one = 1;
  [[maybe_unused]] auto n = write(stop_fd_, &one, sizeof one);  // stays readable: all wake
  acceptor_.join();
  for (auto& p : pumps_) p.thread.join();
  close(listener_);
  close(stop_fd_);
}

void NetnsRelay::accept_loop() {
  while (true) {
    pollfd fds[2] = {{listener_, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[1].revents != 0) return;
    if (!(fds[0].revents & POLLIN)) continue;
    const int client = accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) continue;
    int upstream = -1;
    try {
      upstream = dial(connect_);
    } catch (const std::exception&) {
      upstream = -1;  // the namespace went away: refused, as a closed port would be
    }
    if (upstream < 0) {
      close(client);
      continue;
    }
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = pumps_.begin(); it != pumps_.end();) {  // the finished ones
      if (it->done) {
        it->thread.join();
        it = pumps_.erase(it);
      } else {
        ++it;
      }
    }
    Pump& p = pumps_.emplace_back();
    p.thread = std::thread([this, client, upstream, &p] { pump(client, upstream, p); });
  }
}

void NetnsRelay::pump(int a, int b, Pump& self) {
  // fds[0] reads a (writes b), fds[1] reads b (writes a); a direction that saw EOF is
  // half-closed on the other side and no longer polled (a negative fd).
  pollfd fds[3] = {{a, POLLIN, 0}, {b, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
  char buffer[64 * 1024];
  while (fds[0].fd >= 0 || fds[1].fd >= 0) {
    if (poll(fds, 3, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (fds[2].revents != 0) break;
    bool failed = false;
    for (int i = 0; i < 2 && !failed; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      const int from = i == 0 ? a : b, to = i == 0 ? b : a;
      const ssize_t n = read(from, buffer, sizeof buffer);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        shutdown(to, SHUT_WR);
        fds[i].fd = -1;
        if (n < 0) failed = true;
      } else if (!write_all(to, buffer, static_cast<std::size_t>(n))) {
        failed = true;
      }
    }
    if (failed) break;
  }
  close(a);
  close(b);
  self.done = true;
}

}  // namespace commgate::sim
