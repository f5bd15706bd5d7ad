// An in-memory LeaseClient for leader election tests: one store of Leases by
// namespace/name with a resourceVersion bumped on every write, so a stale update is
// answered kConflict as the API server answers 409. An interceptor sees every call first
// and may answer it instead (an error, a conflict) or act in between (another replica's
// write), to make the races that only happen between a read and a write.
#pragma once

#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "kube/leader_election.h"

namespace commgate::kube::testing {

class FakeLeaseClient : public LeaseClient {
 public:
  // method: "get", "create" or "update"; object: the Lease written (null for get).
  // Called without the fake's lock held; nullopt lets the call through.
  using Interceptor =
      std::function<std::optional<Reply>(const std::string& method, const nlohmann::json& object)>;

  void set_interceptor(Interceptor interceptor) {
    std::lock_guard lock(mu_);
    interceptor_ = std::move(interceptor);
  }

  // Stores `lease` as it is (another writer), with a new resourceVersion.
  void put(nlohmann::json lease) {
    std::lock_guard lock(mu_);
    store(std::move(lease));
  }
  std::optional<nlohmann::json> lease(const std::string& ns, const std::string& name) const {
    std::lock_guard lock(mu_);
    const auto it = leases_.find(ns + "/" + name);
    if (it == leases_.end()) return std::nullopt;
    return it->second;
  }
  int writes() const {
    std::lock_guard lock(mu_);
    return writes_;
  }

  Reply get(const std::string& ns, const std::string& name) override {
    if (auto reply = intercept("get", nullptr)) return *reply;
    std::lock_guard lock(mu_);
    const auto it = leases_.find(ns + "/" + name);
    if (it == leases_.end())
      return {Outcome::kNotFound, nullptr, "leases \"" + name + "\" not found"};
    return {Outcome::kOk, it->second, ""};
  }
  Reply create(const nlohmann::json& lease) override {
    if (auto reply = intercept("create", lease)) return *reply;
    std::lock_guard lock(mu_);
    if (leases_.count(key_of(lease))) return {Outcome::kConflict, nullptr, "already exists"};
    return {Outcome::kOk, store(lease), ""};
  }
  Reply update(const nlohmann::json& lease) override {
    if (auto reply = intercept("update", lease)) return *reply;
    std::lock_guard lock(mu_);
    const auto it = leases_.find(key_of(lease));
    if (it == leases_.end()) return {Outcome::kNotFound, nullptr, "not found"};
    if (text(metadata(lease), "resourceVersion") !=
        it->second["metadata"]["resourceVersion"].get<std::string>()) {
      return {Outcome::kConflict, nullptr, "the object has been modified"};
    }
    return {Outcome::kOk, store(lease), ""};
  }

 private:
  static const nlohmann::json& metadata(const nlohmann::json& lease) {
    static const nlohmann::json kNone = nlohmann::json::object();
    const auto it = lease.find("metadata");
    return it != lease.end() ? *it : kNone;
  }
  static std::string text(const nlohmann::json& object, const char* key) {
    const auto it = object.find(key);
    return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
  }
  static std::string key_of(const nlohmann::json& lease) {
    return text(metadata(lease), "namespace") + "/" + text(metadata(lease), "name");
  }
  nlohmann::json store(nlohmann::json lease) {
    lease["metadata"]["resourceVersion"] = std::to_string(++version_);
    ++writes_;
    leases_[key_of(lease)] = lease;
    return lease;
  }
  std::optional<Reply> intercept(const std::string& method, const nlohmann::json& object) {
    Interceptor interceptor;
    {
      std::lock_guard lock(mu_);
      interceptor = interceptor_;
    }
    return interceptor ? interceptor(method, object) : std::nullopt;
  }

  mutable std::mutex mu_;
  std::map<std::string, nlohmann::json> leases_;
  int64_t version_ = 0;
  int writes_ = 0;
  Interceptor interceptor_;
};

}  // namespace commgate::kube::testing
