// A Reader (kube/client.h) served from informers' stores, as controller-runtime's
// cache-backed client: a reconciler reads what the watches already hold instead of asking
// the API server, so a reconcile costs requests only for its writes.
//
//   CachedReader reader({{"/apis/batch/v1/jobs", &jobs.store()},          // all namespaces
//                        {"/apis/commgate.io/v1alpha1/commprofiles", &profiles.store()}},
//                       live);                                            // everything else
//   reader.get("/apis/batch/v1/namespaces/ns/jobs/a");   // from the jobs store, key "ns/a"
//
// Served from a store: get() of an object of a collection a source covers (a cluster-wide
// source covers every namespace, a namespaced one only its own), and list() of such a
// collection, filtered by namespace and label selector (equality- and set-based, as the
// API server parses it). An absent object is the ApiError 404 NotFound a server answers.
// Everything else goes to the fallback Reader (the live client): paths no source covers,
// subresources (".../status"), field selectors, continue tokens, and every read while
// the covering store has not completed its first list.
//
// What differs from the server (as with controller-runtime's cache):
// - the store may be stale: an object just written may read as its older version or as
//   absent until the watch delivers it (reconcile is level-based and runs again then);
// - a source watched with a label selector holds only the objects it matches: a get of
//   an object outside it is 404 even if the server has it;
// - list(): one page (limit is ignored), items in key order, resource_version "".
//
// Thread contract: every method may be called from any thread (the stores hand out
// immutable snapshots).
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/label_selector.h"
#include "kube/client.h"
#include "kube/store.h"

namespace commgate::kube {

// An API path taken apart: "/apis/batch/v1/namespaces/ns/jobs/a" is
// {prefix "/apis/batch/v1", ns "ns", resource "jobs", name "a"}.
struct ApiPath {
  std::string prefix;       // "/api/v1" or "/apis/GROUP/VERSION"
  std::string ns;           // "" for cluster-scoped objects and all-namespace collections
  std::string resource;     // plural: "jobs", "namespaces"
  std::string name;         // "" for a collection
  std::string subresource;  // "status", "scale", ...; "" for the object itself
};
// nullopt when `path` is no API path (no /api/v1 or /apis/G/V prefix, too few or too
// many segments, an empty segment, a query string).
std::optional<ApiPath> parse_api_path(const std::string& path);

// The query-string label selector ("a=b,c!=d,e in (x,y),f notin (z),g,!h") as a
// LabelSelector (core/label_selector.h): "=" and "==" become matchLabels, "!=" NotIn
// (which, as in Kubernetes, also matches objects without the label), "k" Exists, "!k"
// DoesNotExist. Throws ApiError 400 BadRequest naming the term, as the server does.
LabelSelector parse_label_selector_query(const std::string& text);

class CachedReader final : public Reader {
 public:
  struct Source {
    // The collection the store holds: "/apis/batch/v1/jobs" (all namespaces),
    // "/apis/batch/v1/namespaces/ns/jobs" (one), "/api/v1/namespaces" (cluster-scoped).
    std::string collection;
    const Store* store = nullptr;
  };
  struct Counters {
    uint64_t cache_reads = 0;     // gets and lists answered from a store
    uint64_t fallback_reads = 0;  // passed on to the fallback reader
  };

  // The stores and `fallback` must outlive the reader. Throws std::invalid_argument for
  // a source whose collection is no collection path or whose store is null.
  CachedReader(std::vector<Source> sources, const Reader& fallback);

  nlohmann::json get(const std::string& path) const override;
  ListPage list(const std::string& collection, const ListOptions& options = {}) const override;

  Counters counters() const;

 private:
  struct Covered {
    ApiPath path;
    const Store* store = nullptr;
  };
  // The source's store for `path` (already parsed), when one covers it and has synced.
  const Store* store_for(const ApiPath& path) const;

  std::vector<Covered> sources_;
  const Reader& fallback_;
  mutable std::atomic<uint64_t> cache_reads_{0};
  mutable std::atomic<uint64_t> fallback_reads_{0};
};

}  // namespace commgate::kube
