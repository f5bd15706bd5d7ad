// The plumbing the sim's controllers share (scheduler, Job controller): watch some
// resources and run one pass on a thread of its own after any change, or when the last
// pass asked to run again at a time. Watch callbacks run under the store's lock, so they
// only set a flag here; passes run without it.
//
// Changes that arrive during a pass are batched into the next one, which starts no sooner
// than the last pass took (at most kMaxPassGap later): a controller whose passes are long
// (10,000 pods listed and walked) so runs at most half the time instead of back to back,
// leaving the store's lock and the CPU to the API server between passes, as upstream's
// rate-limited work queues do. Short passes (small clusters) are not delayed noticeably.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "sim/object_store.h"

namespace commgate::sim {

class ChangeLoop {
 public:
  static constexpr std::chrono::milliseconds kMaxPassGap{1000};

  // One pass over the current state; returns when the next pass is due without a change
  // (a deadline), or nullopt. It must not throw.
  using Pass = std::function<std::optional<TimePoint>()>;

  ChangeLoop(ObjectStore& store, std::vector<ResourceInfo> watched, Pass pass);
  ~ChangeLoop();  // stop()
  ChangeLoop(const ChangeLoop&) = delete;
  ChangeLoop& operator=(const ChangeLoop&) = delete;

  void start();  // watches, then a first pass
  void stop();

 private:
  void run();

  ObjectStore& store_;
  const std::vector<ResourceInfo> watched_;
  const Pass pass_;
  std::vector<uint64_t> watches_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool dirty_ = false;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace commgate::sim
