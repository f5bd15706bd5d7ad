#include "operator/pool_locks.h"

namespace commgate::op {

std::unique_lock<std::mutex> PoolLocks::lock(const std::string& pool) {
  std::mutex* m = nullptr;
  {
    std::lock_guard guard(mu_);
    auto& slot = pools_[pool];
    if (!slot) slot = std::make_unique<std::mutex>();
    m = slot.get();
  }
  return std::unique_lock<std::mutex>(*m);
}

}  // namespace commgate::op
