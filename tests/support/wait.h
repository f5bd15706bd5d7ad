// Waiting in tests: poll a condition until it holds or a deadline passes. Tests wait for
// state this way, never with a bare sleep.
#pragma once

#include <chrono>
#include <functional>
#include <thread>

namespace commgate::testing {

// True as soon as `condition` holds; false when `timeout` passed first. Polls every 2 ms.
inline bool wait_until(const std::function<bool()>& condition,
                       std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!condition()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));  // polling interval
  }
  return true;
}

}  // namespace commgate::testing
