#include "probe-job/watchdog.h"

#include <algorithm>
#include <cstdlib>

#include "probe-job/probe_config.h"

namespace commgate::probe {

Watchdog::Watchdog(std::chrono::steady_clock::duration budget, OnExpire on_expire)
    : start_(std::chrono::steady_clock::now()),
      deadline_(start_ + budget),
      on_expire_(std::move(on_expire)),
      thread_([this] { run(); }) {}

Watchdog::~Watchdog() {
  disarm();
  if (thread_.joinable()) thread_.join();
}

void Watchdog::enter(const std::string& stage) {
  std::lock_guard<std::mutex> lock(mu_);
  stage_ = stage;
}

std::string Watchdog::stage() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stage_;
}

double Watchdog::remaining_s() const {
  const auto left = deadline_ - std::chrono::steady_clock::now();
  return std::max(0.0, std::chrono::duration<double>(left).count());
}

void Watchdog::disarm() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    disarmed_ = true;
  }
  cv_.notify_all();
}

void Watchdog::run() {
  std::unique_lock<std::mutex> lock(mu_);
  if (cv_.wait_until(lock, deadline_, [this] { return disarmed_; })) return;
  const std::string stage = stage_;
  lock.unlock();
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  if (on_expire_) on_expire_(stage, elapsed);
  // on_expire is expected to exit; make sure a hung process never outlives its deadline.
  std::_Exit(kExitTimeout);
}

}  // namespace commgate::probe
