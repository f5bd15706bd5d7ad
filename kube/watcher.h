// list + watch of one collection as an explicit state machine (kube-rs `watcher`,
// client-go's Reflector):
//
//   kListing   list in pages: Init, InitApply per object, InitDone -> kWatching
//              error: backoff                                      -> kListing
//   kWatching  watch from the last resourceVersion with bookmarks;
//              ADDED/MODIFIED -> Applied, DELETED -> Deleted, BOOKMARK moves the version
//              watch ended by the server, or broken (any exception) -> kWatching (restart)
//              410 Expired (as a status or an ERROR event)         -> kListing (relist)
//              another ERROR event or error status: backoff        -> kListing / kWatching
//   kBackoff   waits (exponential with jitter, Retry-After honoured), then the state above
//   kStopped
//
// The consumer runs on the watcher's own thread, in order: events arrive from cpprestsdk
// threads into a queue that thread drains, so the consumer may block briefly without
// stalling the client. State and counters are readable from any thread (metrics, tests).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>

#include "core/log.h"
#include "kube/api_client.h"
#include "kube/clock.h"
#include "kube/watcher_event.h"

namespace commgate::kube {

enum class WatcherState { kListing, kWatching, kBackoff, kStopped };
const char* to_string(WatcherState state);

struct WatcherCounters {
  uint64_t lists = 0;     // complete lists (the first and every relist)
  uint64_t relists = 0;   // complete lists after the first
  uint64_t restarts = 0;  // watches started again from the last resourceVersion
  uint64_t errors = 0;    // failed lists, refused or broken watches, ERROR events
  uint64_t events = 0;    // Applied and Deleted events delivered
};

// Drops what no commgate cache reader uses and that can be most of an object's size:
// metadata.managedFields (controller-runtime strips it by default) and kubectl's
// last-applied-configuration annotation (a second copy of the spec).
void strip_unread_metadata(nlohmann::json& object);

class Watcher {
 public:
  struct Options {
    std::string path;  // the collection: "/apis/commgate.io/v1alpha1/commpolicies"
    std::string label_selector, field_selector;
    int64_t page_size = 500;
    int watch_timeout_seconds = 290;
    std::chrono::milliseconds backoff_initial{200};
    std::chrono::milliseconds backoff_max{30'000};
    Logger log;  // failed lists and broken watches, with the collection as a field
    std::shared_ptr<Clock> clock;  // the backoff's waits; default: steady_clock()
    // Applied to every listed and watched object before the consumer sees it
    // (client-go's SetTransform): a cache keeps only what its readers use. Default:
    // strip_unread_metadata. Must not throw; must keep metadata.name, namespace and
    // resourceVersion.
    std::function<void(nlohmann::json&)> transform = strip_unread_metadata;
  };

  // `client` must outlive the watcher.
  Watcher(const ApiClient& client, Options options,
          std::function<void(const WatcherEvent&)> consumer);
  ~Watcher();  // stop()
  Watcher(const Watcher&) = delete;
  Watcher& operator=(const Watcher&) = delete;

  void start();
  // Stops the current call or watch and joins; no consumer call runs after it returns.
  void stop();

  WatcherState state() const { return state_.load(); }
  WatcherCounters counters() const;
  std::string resource_version() const;  // the last one seen (list, event or bookmark)

 private:
  enum class Next { kList, kWatch };
  struct Inbox;  // events and the end of the current watch, from cpprestsdk threads

  void run();
  Next list();
  Next watch();
  // Waits the backoff (or `at_least`); false when stopping.
  bool backoff(std::chrono::milliseconds at_least);
  void reset_backoff();
  void note_error(const std::string& what);
  bool stopping() const;

  const ApiClient& client_;
  const Options options_;
  const std::function<void(const WatcherEvent&)> consumer_;
  const std::shared_ptr<Clock> clock_;

  std::atomic<WatcherState> state_{WatcherState::kStopped};
  mutable std::mutex mu_;  // guards what follows
  std::condition_variable wake_;
  std::atomic<bool> stop_{false};
  Cancel cancel_;  // the current list call
  WatcherCounters counters_;
  std::string resource_version_;
  std::shared_ptr<Inbox> inbox_;  // the current watch's

  std::chrono::milliseconds next_backoff_;
  std::mt19937_64 random_;
  std::thread thread_;
};

}  // namespace commgate::kube
