#include "server/router.h"

#include <algorithm>
#include <stdexcept>

namespace commgate::server {

Router& Router::add(std::string method, std::string path, Handler handler) {
  if (path.empty() || path.front() != '/') {
    throw std::invalid_argument("route path must start with '/': " + path);
  }
  if (!handler) throw std::invalid_argument("route without handler: " + path);
  Route route;
  route.method = std::move(method);
  if (path.size() >= 2 && path.ends_with("/*")) {
    route.prefix = true;
    path.resize(path.size() - 2);
  }
  route.path = std::move(path);
  for (const Route& r : routes_) {
    if (r.method == route.method && r.path == route.path && r.prefix == route.prefix) {
      throw std::invalid_argument("duplicate route: " + r.method + " " + r.path);
    }
  }
  route.handler = std::move(handler);
  routes_.push_back(std::move(route));
  return *this;
}

bool Router::matches(const Route& route, std::string_view path) const {
  if (!route.prefix) return path == route.path;
  if (!path.starts_with(route.path)) return false;
  return path.size() == route.path.size() || path[route.path.size()] == '/' || route.path.empty();
}

Response Router::dispatch(const Request& request) const {
  // The best path match: exact beats prefix, longer prefix beats shorter.
  const Route* best_path = nullptr;
  for (const Route& r : routes_) {
    if (!matches(r, request.path)) continue;
    if (best_path == nullptr || (!r.prefix && best_path->prefix) ||
        (r.prefix && best_path->prefix && r.path.size() > best_path->path.size())) {
      best_path = &r;
    }
  }
  if (best_path == nullptr) return Response::text(404, "not found\n");

  // Among routes with that same path, the one for this method.
  const bool head = request.method == "HEAD";
  const Route* get_route = nullptr;
  std::vector<std::string> allow;
  for (const Route& r : routes_) {
    if (r.prefix != best_path->prefix || r.path != best_path->path) continue;
    if (r.method == request.method || r.method == "*") return r.handler(request);
    if (head && r.method == "GET") get_route = &r;
    allow.push_back(r.method);
    if (r.method == "GET") allow.push_back("HEAD");
  }
  if (get_route != nullptr) return get_route->handler(request);
  std::sort(allow.begin(), allow.end());
  allow.erase(std::unique(allow.begin(), allow.end()), allow.end());
  std::string allow_value;
  for (const std::string& m : allow) {
    if (!allow_value.empty()) allow_value += ", ";
    allow_value += m;
  }
  return Response::text(405, "method not allowed\n").with_header("Allow", allow_value);
}

}  // namespace commgate::server
