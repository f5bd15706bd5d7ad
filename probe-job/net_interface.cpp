#include "probe-job/net_interface.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace commgate::probe {
namespace {

std::string address_text(const sockaddr* sa) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (sa->sa_family == AF_INET) {
    sockaddr_in in{};
    std::memcpy(&in, sa, sizeof in);
    inet_ntop(AF_INET, &in.sin_addr, buf, sizeof buf);
  } else if (sa->sa_family == AF_INET6) {
    sockaddr_in6 in6{};
    std::memcpy(&in6, sa, sizeof in6);
    inet_ntop(AF_INET6, &in6.sin6_addr, buf, sizeof buf);
  }
  return buf;
}

}  // namespace

std::optional<LocalRoute> route_to(const std::string& host, std::string* error) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  if (int rc = getaddrinfo(host.c_str(), "9", &hints, &found); rc != 0) {
    *error = "cannot resolve " + host + ": " + gai_strerror(rc);
    return std::nullopt;
  }
  std::optional<LocalRoute> route;
  std::string last_error = "no address";
  for (addrinfo* ai = found; ai != nullptr && !route; ai = ai->ai_next) {
    int fd = socket(ai->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
      sockaddr_storage local{};
      socklen_t len = sizeof local;
      if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) == 0) {
        route = LocalRoute{address_text(reinterpret_cast<sockaddr*>(&local)), ""};
      }
    } else {
      last_error = std::strerror(errno);
    }
    close(fd);
  }
  freeaddrinfo(found);
  if (!route) {
    *error = "no route to " + host + ": " + last_error;
    return std::nullopt;
  }
  ifaddrs* ifs = nullptr;
  if (getifaddrs(&ifs) == 0) {
    for (ifaddrs* i = ifs; i != nullptr; i = i->ifa_next) {
      if (i->ifa_addr == nullptr) continue;
      if (i->ifa_addr->sa_family != AF_INET && i->ifa_addr->sa_family != AF_INET6) continue;
      if (address_text(i->ifa_addr) == route->address) {
        route->interface_name = i->ifa_name;
        break;
      }
    }
    freeifaddrs(ifs);
  }
  return route;
}

std::string local_hostname() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

namespace {

std::optional<std::string> read_small_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::string text(256, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  return text;
}

}  // namespace

NodeLink read_node_link(const std::string& interface_name, const std::string& sysfs) {
  namespace fs = std::filesystem;
  NodeLink link;
  std::error_code ec;
  const fs::path infiniband = fs::path(sysfs) / "class" / "infiniband";
  link.infiniband_present = fs::is_directory(infiniband, ec) &&
                            fs::directory_iterator(infiniband, ec) != fs::directory_iterator();
  // Names come from the backend: keep them to one path component.
  const bool safe = !interface_name.empty() && interface_name.find('/') == std::string::npos &&
                    interface_name.find("..") == std::string::npos;
  if (!safe) return link;
  std::optional<double> rate;
  if (const auto colon = interface_name.find(':'); colon != std::string::npos) {
    const auto text = read_small_file(infiniband / interface_name.substr(0, colon) / "ports" /
                                      interface_name.substr(colon + 1) / "rate");
    if (text) rate = parse_infiniband_rate(*text);
  } else {
    const fs::path net = fs::path(sysfs) / "class" / "net" / interface_name;
    if (fs::exists(net / "device", ec)) {
      const auto text = read_small_file(net / "speed");
      if (text) rate = parse_ethernet_speed(*text);
    }
  }
  link.rate_bits_per_s = rate.value_or(0);
  return link;
}

}  // namespace commgate::probe
