// A per-request deadline for the admission handlers. A handler is pure computation and
// cannot be interrupted, so it runs on one of this pool's threads while the server's
// thread waits for it at most `deadline`; past it the caller answers without it
// (handlers.h gate_past_deadline / deny_past_deadline) and the late answer is dropped.
// A request never waits longer than the deadline, even when every pool thread is busy
// with abandoned work (its task then waits in the queue, and is skipped once its caller
// has given up).
//
// Thread contract: run() may be called from any number of threads at once.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "webhook/admission_review.h"

namespace commgate::webhook {

class DeadlineRunner {
 public:
  explicit DeadlineRunner(size_t threads);
  ~DeadlineRunner();
  DeadlineRunner(const DeadlineRunner&) = delete;
  DeadlineRunner& operator=(const DeadlineRunner&) = delete;

  // The handler's answer, or nullopt when it did not finish within `deadline` (a zero
  // deadline: at once, without running it). A handler's exception is rethrown here.
  std::optional<AdmissionResponse> run(std::function<AdmissionResponse()> handler,
                                       std::chrono::steady_clock::duration deadline);

  // Tasks whose caller gave up before they finished (for /metrics).
  uint64_t abandoned() const;

 private:
  struct Task;
  void work();

  mutable std::mutex mu_;
  std::condition_variable ready_;
  std::deque<std::shared_ptr<Task>> queue_;
  bool stopping_ = false;
  uint64_t abandoned_ = 0;
  std::vector<std::thread> threads_;
};

}  // namespace commgate::webhook
