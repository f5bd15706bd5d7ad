// This process's own writes that its cache may not show yet.
//
// The reconciler reads through a cache (informers, kube/cached_reader.h) that learns of a
// write only from the write's watch event: a moment later, or seconds later when a watch
// was dropped and is being re-established. Until then the cache answers with the object as
// it was before the write, the stale echo of the reconciler's own state. Acting on it would
// undo or repeat what the write did: a probe failure's status write (nextProbeTime, the
// attempt counted) read back without it starts a second probe at once and counts the
// failure twice; a probe result recorded in the pool's CommProfile read back without it
// probes the pool again, or records the next result over the older status (409, or lost).
//
// So every write is remembered under the object's API path with the resourceVersion the
// API server gave it and, where a reader must use what was written (the CommProfile's
// measurement), the object itself, until a read shows that version or a newer one. Only
// this process's writes: another replica's are not known here, and are what the API
// server's resourceVersion preconditions (409) are for. Thread-safe.
#pragma once

#include <cstddef>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace commgate::op {

class OwnWrites {
 public:
  enum class Keep {
    kVersion,  // only the resourceVersion: enough to tell that a read is older
    kObject,   // the object as written too: a read that is older is replaced by it
  };

  // After a write of `path` that the API server answered with `written`.
  void remember(const std::string& path, const nlohmann::json& written, Keep keep);

  // This process's last write of `path` when it is newer than `seen` (a copy just read):
  // the object as written (Keep::kObject), or null (Keep::kVersion). nullopt when there is
  // none, or when `seen` shows it (same resourceVersion or newer): the write is forgotten
  // then, the reader having caught up.
  std::optional<nlohmann::json> newer_than(const std::string& path, const nlohmann::json& seen);

  // The object is gone (404), or a write failed: nothing of it to wait for.
  void forget(const std::string& path);

  // Writes remembered and not yet seen (for tests).
  std::size_t size() const;

 private:
  struct Write {
    long long version = -1;
    nlohmann::json object;  // null unless Keep::kObject
  };
  mutable std::mutex mu_;
  std::map<std::string, Write> writes_;  // by API path
};

}  // namespace commgate::op
