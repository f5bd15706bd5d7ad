// An in-memory API server behind the Reader, Writer and StatusWriter seams (kube/client.h),
// for unit tests of controllers: objects keyed by their API path, one resourceVersion
// counter, and the real server's write rules that reconcilers depend on:
// - create: 409 AlreadyExists; status is dropped; uid, resourceVersion, generation 1 set;
// - update / patch: 404 when absent; a metadata.resourceVersion that is set and not the
//   current one is 409 Conflict; .status is kept (it is written only through the status
//   writer); generation grows when anything but metadata and status changes; a write
//   that changes nothing keeps the resourceVersion;
// - server-side apply creates when absent and needs a field manager (422), merged as a
//   merge patch like commgate-sim's approximation;
// - remove: 404 when absent; an object with finalizers gets a deletionTimestamp and stays
//   (and goes when an update empties its finalizers); pods and services answer with the
//   object, everything else with a Success Status.
// Error injection: fail_next(method, error, n) makes the next n calls of that method
// throw `error` without touching the objects. before_next(method, hook) runs `hook` once,
// just before the next call of that method is served: a race made on purpose (another
// writer changes the object between a reconciler's read and its write, so the write
// meets a real 409). actions() records every write that
// succeeded ("create /api/v1/namespaces/ns/services/x"), for exactly-once assertions.
// Thread-safe.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "kube/client.h"

namespace commgate::kube::testing {

enum class Method { kGet, kList, kCreate, kUpdate, kPatch, kRemove, kUpdateStatus, kPatchStatus };

class FakeClient final : public Reader, public Writer, public StatusWriter {
 public:
  nlohmann::json get(const std::string& path) const override;
  ListPage list(const std::string& collection, const ListOptions& options = {}) const override;
  nlohmann::json create(const std::string& collection, const nlohmann::json& object) override;
  nlohmann::json update(const std::string& path, const nlohmann::json& object) override;
  nlohmann::json patch(const std::string& path, PatchType type, const nlohmann::json& patch,
                       const PatchOptions& options = {}) override;
  nlohmann::json remove(const std::string& path, const DeleteOptions& options = {}) override;
  nlohmann::json update_status(const std::string& path, const nlohmann::json& object) override;
  nlohmann::json patch_status(const std::string& path, PatchType type, const nlohmann::json& patch,
                              const PatchOptions& options = {}) override;

  // The next `times` calls of `method` throw `error`.
  void fail_next(Method method, const ApiError& error, int times = 1);
  // Runs `hook` (without the fake's lock: it may call the fake) before the next call of
  // `method`, after that call is counted and any injected error is thrown.
  void before_next(Method method, std::function<void()> hook);
  // Calls of `method` so far, failed ones included.
  int calls(Method method) const;
  // Successful writes in order: "<verb> <object path>" (verbs: create, update, patch,
  // remove, update_status, patch_status).
  std::vector<std::string> actions() const;
  // Stores an object as it is given (status included) without counting a call; sets
  // its resourceVersion. Returns the stored object.
  nlohmann::json seed(const std::string& collection, const nlohmann::json& object);
  // The stored object, if any, without counting a call.
  std::optional<nlohmann::json> peek(const std::string& path) const;
  // The current resourceVersion (the last write's).
  int64_t resource_version() const;

  // The conflict error the server answers for a stale resourceVersion.
  static ApiError conflict(const std::string& resource, const std::string& name);

 private:
  struct Ref;
  void enter(Method method) const;  // counts the call; throws an injected error
  nlohmann::json write(const Ref& ref, nlohmann::json next, const nlohmann::json& current,
                       const std::string& action, const std::string& verb);
  nlohmann::json patch_part(Method method, const std::string& path, PatchType type,
                            const nlohmann::json& patch, const PatchOptions& options);
  nlohmann::json create_locked(const Ref& ref, nlohmann::json object, const std::string& verb);

  mutable std::mutex mu_;
  std::map<std::string, std::map<std::string, nlohmann::json>> objects_;  // collection, name
  int64_t version_ = 0;
  int64_t uids_ = 0;
  mutable std::map<Method, int> calls_;
  mutable std::map<Method, std::deque<ApiError>> failures_;
  mutable std::map<Method, std::deque<std::function<void()>>> hooks_;
  std::vector<std::string> actions_;
};

}  // namespace commgate::kube::testing
