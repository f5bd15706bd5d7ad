// The plumbing the sim's controllers share (scheduler, Job controller): watch some
// resources and run one pass on a thread of its own after any change, or when the last
// pass asked to run again at a time. Watch callbacks run under the store's lock, so they
// only set a flag here; passes run without it.
#pragma once

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
