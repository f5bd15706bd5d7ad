#include "webhook/deadline_runner.h"

namespace commgate::webhook {

struct DeadlineRunner::Task {
  std::function<AdmissionResponse()> handler;
  std::mutex mu;
  std::condition_variable done_cv;
  bool done = false;
  bool abandoned = false;
  std::optional<AdmissionResponse> answer;
  std::exception_ptr error;
};

DeadlineRunner::DeadlineRunner(size_t threads) {
  for (size_t i = 0; i < std::max<size_t>(1, threads); ++i)
    threads_.emplace_back([this] { work(); });
}

DeadlineRunner::~DeadlineRunner() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  ready_.notify_all();
  for (auto& t : threads_) t.join();
}

void DeadlineRunner::work() {
  for (;;) {
    std::shared_ptr<Task> task;
    {
      std::unique_lock<std::mutex> lock(mu_);
      ready_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    {
      std::lock_guard<std::mutex> lock(task->mu);
      if (task->abandoned) continue;  // its caller answered without it
    }
    std::optional<AdmissionResponse> answer;
    std::exception_ptr error;
    try {
      answer = task->handler();
    } catch (...) {
      error = std::current_exception();
    }
    {
      std::lock_guard<std::mutex> lock(task->mu);
      task->answer = std::move(answer);
      task->error = error;
      task->done = true;
    }
    task->done_cv.notify_one();
  }
}

std::optional<AdmissionResponse> DeadlineRunner::run(std::function<AdmissionResponse()> handler,
                                                     std::chrono::steady_clock::duration deadline) {
  if (deadline <= std::chrono::steady_clock::duration::zero()) return std::nullopt;
  auto task = std::make_shared<Task>();
  task->handler = std::move(handler);
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(task);
  }
  ready_.notify_one();
  std::unique_lock<std::mutex> lock(task->mu);
  if (!task->done_cv.wait_for(lock, deadline, [&] { return task->done; })) {
    task->abandoned = true;
    lock.unlock();
    std::lock_guard<std::mutex> count(mu_);
    ++abandoned_;
    return std::nullopt;
  }
  if (task->error) std::rethrow_exception(task->error);  // the HTTP layer answers 500
  return std::move(task->answer);
}

uint64_t DeadlineRunner::abandoned() const {
  std::lock_guard<std::mutex> lock(mu_);
  return abandoned_;
}

}  // namespace commgate::webhook
