#include "kube/clock.h"

namespace commgate::kube {
namespace {

class SteadyClock : public Clock {
 public:
  time_point now() const override { return std::chrono::steady_clock::now(); }
  bool wait_until(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                  time_point deadline, const std::function<bool()>& done) override {
    return cv.wait_until(lock, deadline, done);
  }
};

}  // namespace

std::shared_ptr<Clock> steady_clock() {
  static const auto clock = std::make_shared<SteadyClock>();
  return clock;
}

Clock::time_point FakeClock::now() const {
  std::lock_guard lock(mu_);
  return now_;
}

bool FakeClock::wait_until(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                           time_point deadline, const std::function<bool()>& done) {
  {
    std::lock_guard guard(mu_);
    ++waiting_;
    waits_.push_back(deadline - now_);
  }
  bool finished = false;
  while (!(finished = done())) {
    {
      std::lock_guard guard(mu_);
      if (now_ >= deadline) break;
    }
    cv.wait_for(lock, std::chrono::milliseconds(1));
  }
  std::lock_guard guard(mu_);
  --waiting_;
  return finished;
}

void FakeClock::advance(duration d) {
  std::lock_guard lock(mu_);
  now_ += d;
}

size_t FakeClock::waiting() const {
  std::lock_guard lock(mu_);
  return waiting_;
}

std::vector<Clock::duration> FakeClock::waits() const {
  std::lock_guard lock(mu_);
  return waits_;
}

}  // namespace commgate::kube
