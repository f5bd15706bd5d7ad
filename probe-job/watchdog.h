// Bounds the whole run (--timeout). The probe names each stage as it enters it; when the
// deadline passes, the watchdog's thread calls `on_expire` with the stage that hung (it
// writes the partial report and exits the process: a collective stuck inside Gloo or
// NCCL cannot be interrupted any other way).
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace commgate::probe {

class Watchdog {
 public:
  using OnExpire = std::function<void(const std::string& stage, double elapsed_s)>;

  Watchdog(std::chrono::steady_clock::duration budget, OnExpire on_expire);
  ~Watchdog();  // disarms
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  void enter(const std::string& stage);
  std::string stage() const;
  // Seconds left before the deadline (never negative).
  double remaining_s() const;
  void disarm();

 private:
  void run();

  const std::chrono::steady_clock::time_point start_;
  const std::chrono::steady_clock::time_point deadline_;
  OnExpire on_expire_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::string stage_ = "setup";
  bool disarmed_ = false;
  std::thread thread_;
};

}  // namespace commgate::probe
