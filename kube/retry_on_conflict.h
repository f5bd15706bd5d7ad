// Read-modify-write retried on a conflict, as client-go's retry.RetryOnConflict: `attempt`
// reads the object, changes it and writes it with the resourceVersion it read; a 409
// Conflict (another writer came between) runs it again, at most `attempts` times in all.
// Any other error, and the last conflict, is thrown to the caller.
#pragma once

#include <utility>

#include "kube/api_error.h"

namespace commgate::kube {

inline constexpr int kDefaultConflictAttempts = 5;

template <class Attempt>
auto retry_on_conflict(Attempt&& attempt, int attempts = kDefaultConflictAttempts) {
  for (int n = 1;; ++n) {
    try {
      return attempt();
    } catch (const ApiError& e) {
      if (!e.conflict() || n >= attempts) throw;
    }
  }
}

}  // namespace commgate::kube
