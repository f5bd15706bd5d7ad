// A route table: (method, path) -> Handler. The server answers 404 for an unknown path
// and 405 (with Allow) for a known path and another method.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "server/http.h"

namespace commgate::server {

class Router {
 public:
  // `method` is an HTTP method or "*" (any). `path` is exact ("/healthz"), or ends in "/*"
  // to match that prefix and everything under it ("/apis/*" matches "/apis" and
  // "/apis/x/y"). Exact routes win over prefixes; the longest prefix wins. A GET route
  // also answers HEAD (the body is dropped). Adding the same method and path twice throws
  // std::invalid_argument.
  Router& add(std::string method, std::string path, Handler handler);
  Router& get(std::string path, Handler handler) {
    return add("GET", std::move(path), std::move(handler));
  }
  Router& post(std::string path, Handler handler) {
    return add("POST", std::move(path), std::move(handler));
  }

  // Finds the handler and calls it, or builds the 404/405 answer. Exceptions from the
  // handler propagate (the server turns them into 500).
  Response dispatch(const Request& request) const;

 private:
  struct Route {
    std::string method;
    std::string path;  // for prefix routes: without the trailing "/*"
    bool prefix = false;
    Handler handler;
  };
  bool matches(const Route& route, std::string_view path) const;
  std::vector<Route> routes_;
};

}  // namespace commgate::server
