// The seams between a controller and the API server (STYLE.md, "The shape of a
// controller"): `Reader{get,list}`, `Writer{create,update,patch,remove}` and
// `StatusWriter{update_status,patch_status}`. The operator's steps take these, never the
// HTTP client, so that unit tests run them against the in-memory fake
// (kube/testing/fake_client.h) with an error injected into one method.
//
// Objects are addressed by their API path, as ApiClient does:
// a collection "/apis/commgate.io/v1alpha1/namespaces/ns/trainingjobs", an object that
// collection plus "/name". Every method throws ApiError for a Status answer (404, 409
// Conflict on a stale resourceVersion, 410, 422, 429 with Retry-After) and
// std::runtime_error for a transport failure.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "kube/api_client.h"

namespace commgate::kube {

class Reader {
 public:
  virtual ~Reader() = default;
  virtual nlohmann::json get(const std::string& path) const = 0;
  virtual ListPage list(const std::string& collection, const ListOptions& options = {}) const = 0;
};

class Writer {
 public:
  virtual ~Writer() = default;
  // POST to the collection; returns the created object (with its resourceVersion).
  virtual nlohmann::json create(const std::string& collection, const nlohmann::json& object) = 0;
  // PUT: the object's metadata.resourceVersion, when set, must be the current one (else
  // 409 Conflict). The status is not written (use StatusWriter).
  virtual nlohmann::json update(const std::string& path, const nlohmann::json& object) = 0;
  virtual nlohmann::json patch(const std::string& path, PatchType type, const nlohmann::json& patch,
                               const PatchOptions& options = {}) = 0;
  // DELETE: the object while it stays (finalizers) or for kinds that return it (pods,
  // services); a Success Status otherwise (custom resources, Jobs, Leases, Events).
  virtual nlohmann::json remove(const std::string& path, const DeleteOptions& options = {}) = 0;
};

// The `status` subresource: writes only .status (and checks the resourceVersion).
class StatusWriter {
 public:
  virtual ~StatusWriter() = default;
  virtual nlohmann::json update_status(const std::string& path, const nlohmann::json& object) = 0;
  virtual nlohmann::json patch_status(const std::string& path, PatchType type,
                                      const nlohmann::json& patch,
                                      const PatchOptions& options = {}) = 0;
};

// The three over the cpprestsdk client (which must outlive it).
class HttpClient final : public Reader, public Writer, public StatusWriter {
 public:
  explicit HttpClient(const ApiClient& api) : api_(api) {}

  nlohmann::json get(const std::string& path) const override { return api_.get(path); }
  ListPage list(const std::string& collection, const ListOptions& options = {}) const override {
    return api_.list(collection, options);
  }
  nlohmann::json create(const std::string& collection, const nlohmann::json& object) override {
    return api_.create(collection, object);
  }
  nlohmann::json update(const std::string& path, const nlohmann::json& object) override {
    return api_.update(path, object);
  }
  nlohmann::json patch(const std::string& path, PatchType type, const nlohmann::json& patch,
                       const PatchOptions& options = {}) override {
    return api_.patch(path, type, patch, options);
  }
  nlohmann::json remove(const std::string& path, const DeleteOptions& options = {}) override {
    return api_.remove(path, options);
  }
  nlohmann::json update_status(const std::string& path, const nlohmann::json& object) override {
    return api_.update(path + "/status", object);
  }
  nlohmann::json patch_status(const std::string& path, PatchType type, const nlohmann::json& patch,
                              const PatchOptions& options = {}) override {
    return api_.patch(path + "/status", type, patch, options);
  }

 private:
  const ApiClient& api_;
};

}  // namespace commgate::kube
