// The Kubernetes REST surface over an ObjectStore: discovery, OpenAPI, and the verbs on
// /api/v1/... and /apis/<group>/<version>/... (get, list, watch, create, update, patch,
// delete, deletecollection; status and scale subresources; Table output). A Request ->
// Response function, plus the bookkeeping of open watch streams (timeouts, bookmarks).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "core/server/http.h"
#include "sim/object_store.h"

namespace commgate::sim {

struct ApiHandlerOptions {
  std::string token;  // required "Authorization: Bearer <token>"; "" disables auth
  std::chrono::seconds default_watch_timeout{1800};
};

class ApiHandlers {
 public:
  ApiHandlers(ObjectStore& store, ApiHandlerOptions options);

  // Never throws: every failure becomes a Status response.
  server::Response handle(const server::Request& request);

  // Called periodically: ends watches past their timeoutSeconds and forgets closed ones;
  // with `send_bookmarks`, sends a BOOKMARK to the watches that allowed them.
  void tick(bool send_bookmarks);
  std::size_t open_watches() const;
  // Ends every open watch stream now, cleanly (the last chunk), as an apiserver that
  // sheds load or restarts does; clients must watch again from their last version.
  void close_all_watches();

 private:
  struct ActiveWatch {
    std::shared_ptr<server::StreamSink> sink;
    std::chrono::steady_clock::time_point deadline;
    bool bookmarks = false;
  };

  server::Response dispatch(const server::Request& request);
  server::Response serve_resource(const server::Request& request, const std::string& group,
                                  const std::string& version, const std::vector<std::string>& rest);
  server::Response watch(const server::Request& request, const ResourceInfo& r,
                         const std::string& ns);

  ObjectStore& store_;
  ApiHandlerOptions options_;
  mutable std::mutex watches_mu_;
  std::map<uint64_t, ActiveWatch> watches_;
};

}  // namespace commgate::sim
