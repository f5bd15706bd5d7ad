#include "sim/change_loop.h"

#include <algorithm>

namespace commgate::sim {

ChangeLoop::ChangeLoop(ObjectStore& store, std::vector<ResourceInfo> watched, Pass pass)
    : store_(store), watched_(std::move(watched)), pass_(std::move(pass)) {}

ChangeLoop::~ChangeLoop() {
  stop();
}

void ChangeLoop::start() {
  for (const ResourceInfo& r : watched_) {
    WatchRequest w;
    w.from = store_.resource_version();
    w.deliver = [this](const WatchEvent&) {  // under the store's lock: only flag
      std::lock_guard<std::mutex> lock(mu_);
      dirty_ = true;
      cv_.notify_one();
      return true;
    };
    watches_.push_back(store_.watch(r, std::move(w)));
  }
  {
    std::lock_guard<std::mutex> lock(mu_);  // the watches may already be delivering
    dirty_ = true;
    stopping_ = false;
  }
  thread_ = std::thread([this] { run(); });
}

void ChangeLoop::stop() {
  for (uint64_t id : watches_) store_.unwatch(id);
  watches_.clear();
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    cv_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
}

void ChangeLoop::run() {
  std::optional<TimePoint> next;
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    auto ready = [this] { return dirty_ || stopping_; };
    if (next) {
      cv_.wait_until(lock, *next, ready);
    } else {
      cv_.wait(lock, ready);
    }
    if (stopping_) break;
    dirty_ = false;
    lock.unlock();
    const auto started = std::chrono::steady_clock::now();
    next = pass_();
    const auto took = std::chrono::steady_clock::now() - started;
    lock.lock();
    // The next pass, even for a change already flagged, waits as long as this one took.
    const auto rest_until = std::chrono::steady_clock::now() +
                            std::min<std::chrono::steady_clock::duration>(took, kMaxPassGap);
    cv_.wait_until(lock, rest_until, [this] { return stopping_; });
  }
}

}  // namespace commgate::sim
