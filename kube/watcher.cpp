#include "kube/watcher.h"

#include <algorithm>

namespace commgate::kube {
using nlohmann::json;

const char* to_string(WatcherState state) {
  switch (state) {
    case WatcherState::kListing:
      return "listing";
    case WatcherState::kWatching:
      return "watching";
    case WatcherState::kBackoff:
      return "backoff";
    case WatcherState::kStopped:
      return "stopped";
  }
  return "unknown";
}

struct Watcher::Inbox {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<WatchEvent> events;
  bool ended = false;
  std::exception_ptr error;
};

Watcher::Watcher(const ApiClient& client, Options options,
                 std::function<void(const WatcherEvent&)> consumer)
    : client_(client),
      options_(std::move(options)),
      consumer_(std::move(consumer)),
      clock_(options_.clock ? options_.clock : steady_clock()),
      next_backoff_(options_.backoff_initial),
      random_(std::random_device{}()) {}

Watcher::~Watcher() {
  stop();
}

void Watcher::start() {
  std::lock_guard lock(mu_);
  if (thread_.joinable() || stop_) return;
  state_ = WatcherState::kListing;
  thread_ = std::thread([this] { run(); });
}

void Watcher::stop() {
  std::shared_ptr<Inbox> inbox;
  {
    std::lock_guard lock(mu_);
    stop_ = true;
    inbox = inbox_;
  }
  cancel_.cancel();
  wake_.notify_all();
  if (inbox) {
    std::lock_guard lock(inbox->mu);
    inbox->cv.notify_all();
  }
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
  state_ = WatcherState::kStopped;
}

bool Watcher::stopping() const {
  return stop_.load();
}

WatcherCounters Watcher::counters() const {
  std::lock_guard lock(mu_);
  return counters_;
}

std::string Watcher::resource_version() const {
  std::lock_guard lock(mu_);
  return resource_version_;
}

void Watcher::run() {
  Next next = Next::kList;
  while (!stopping()) next = next == Next::kList ? list() : watch();
  state_ = WatcherState::kStopped;
}

void Watcher::note_error(const std::string& what) {
  {
    std::lock_guard lock(mu_);
    ++counters_.errors;
  }
  options_.log.warning(what, {{"collection", options_.path}});
}

void Watcher::reset_backoff() {
  next_backoff_ = options_.backoff_initial;
}

bool Watcher::backoff(std::chrono::milliseconds at_least) {
  state_ = WatcherState::kBackoff;
  // "Equal jitter": between half and all of the current step, so that many watchers
  // failing together do not come back together.
  const auto step = next_backoff_.count();
  std::uniform_int_distribution<int64_t> pick(step / 2, std::max<int64_t>(step, 1));
  auto wait = std::max(std::chrono::milliseconds(pick(random_)), at_least);
  next_backoff_ = std::min(next_backoff_ * 2, options_.backoff_max);
  std::unique_lock lock(mu_);
  clock_->wait_until(lock, wake_, clock_->now() + wait, [&] { return stop_.load(); });
  return !stop_;
}

Watcher::Next Watcher::list() {
  state_ = WatcherState::kListing;
  std::string version;
  ListOptions page_options{options_.label_selector, options_.field_selector, options_.page_size,
                           ""};
  // The objects go to the consumer page by page (Init, InitApply..., InitDone): only one
  // page is ever held here. A consumer that throws is told apart from a list that failed.
  struct ConsumerFailed {
    std::string what;
  };
  const auto deliver = [this](WatcherEvent event) {
    try {
      consumer_(event);
    } catch (const std::exception& e) {
      throw ConsumerFailed{e.what()};
    }
  };
  try {
    deliver(WatcherEvent::init());
    do {
      ListPage page = client_.list(options_.path, page_options, cancel_);
      for (auto& item : page.items) {
        if (options_.transform) options_.transform(item);
        deliver(WatcherEvent::init_apply(std::move(item)));
      }
      version = page.resource_version;
      page_options.continue_token = page.continue_token;
    } while (!page_options.continue_token.empty() && !stopping());
    if (stopping()) return Next::kList;
    {
      std::lock_guard lock(mu_);
      if (++counters_.lists > 1) ++counters_.relists;
      resource_version_ = version;
    }
    deliver(WatcherEvent::init_done());
  } catch (const ConsumerFailed& e) {
    note_error("the consumer failed on the list: " + e.what);
    backoff(std::chrono::milliseconds(0));
    return Next::kList;
  } catch (const ApiError& e) {
    if (stopping()) return Next::kList;
    // 410 here is an expired continue token: the list starts again, after the backoff.
    note_error(std::string("list failed: ") + e.what());
    backoff(std::chrono::duration_cast<std::chrono::milliseconds>(e.retry_after()));
    return Next::kList;
  } catch (const std::exception& e) {
    if (stopping()) return Next::kList;
    note_error(std::string("list failed: ") + e.what());
    backoff(std::chrono::milliseconds(0));
    return Next::kList;
  }
  reset_backoff();
  return Next::kWatch;
}

Watcher::Next Watcher::watch() {
  state_ = WatcherState::kWatching;
  auto inbox = std::make_shared<Inbox>();
  WatchOptions watch_options;
  {
    std::lock_guard lock(mu_);
    if (stop_) return Next::kWatch;
    inbox_ = inbox;
    watch_options.resource_version = resource_version_;
  }
  watch_options.timeout_seconds = options_.watch_timeout_seconds;
  watch_options.allow_bookmarks = true;
  watch_options.label_selector = options_.label_selector;
  watch_options.field_selector = options_.field_selector;

  WatchHandle handle;
  try {
    handle = client_.watch(
        options_.path, watch_options,
        [inbox](WatchEvent event) {
          std::lock_guard lock(inbox->mu);
          inbox->events.push_back(std::move(event));
          inbox->cv.notify_all();
        },
        [inbox](std::exception_ptr error) {
          std::lock_guard lock(inbox->mu);
          inbox->ended = true;
          inbox->error = error;
          inbox->cv.notify_all();
        });
  } catch (const std::exception& e) {
    note_error(std::string("cannot start a watch: ") + e.what());
    backoff(std::chrono::milliseconds(0));
    return Next::kList;
  }

  for (;;) {
    std::deque<WatchEvent> batch;
    bool ended = false;
    std::exception_ptr error;
    {
      std::unique_lock lock(inbox->mu);
      inbox->cv.wait(lock, [&] { return !inbox->events.empty() || inbox->ended || stop_.load(); });
      if (stop_) return Next::kWatch;  // the handle's destructor cancels the watch
      batch.swap(inbox->events);
      ended = inbox->ended;
      error = inbox->error;
    }
    for (WatchEvent& event : batch) {
      const std::string version = resource_version_of(event.object);
      if (event.type == "ERROR") {
        const ApiError e = ApiError::from_status(event.object, "watch " + options_.path);
        note_error(std::string("watch error event: ") + e.what());
        if (e.expired()) return Next::kList;  // the history moved on: list again now
        backoff(std::chrono::milliseconds(0));
        return Next::kList;
      }
      if (event.type == "ADDED" || event.type == "MODIFIED" || event.type == "DELETED") {
        if (options_.transform) options_.transform(event.object);
        try {
          consumer_(event.type == "DELETED" ? WatcherEvent::deleted(std::move(event.object))
                                            : WatcherEvent::applied(std::move(event.object)));
        } catch (const std::exception& e) {
          // The consumer may now be missing this event: only a relist makes it whole.
          note_error(std::string("the consumer failed on an event: ") + e.what());
          backoff(std::chrono::milliseconds(0));
          return Next::kList;
        }
      } else if (event.type != "BOOKMARK") {
        continue;  // an unknown type carries nothing to apply
      }
      std::lock_guard lock(mu_);
      if (!version.empty()) resource_version_ = version;
      if (event.type != "BOOKMARK") ++counters_.events;
    }
    if (!batch.empty()) reset_backoff();
    if (!ended) continue;

    auto restart = [&] {
      std::lock_guard lock(mu_);
      ++counters_.restarts;
      return Next::kWatch;
    };
    if (!error) return restart();  // the server's timeoutSeconds: watch on from here
    try {
      std::rethrow_exception(error);
    } catch (const ApiError& e) {
      note_error(std::string("watch refused: ") + e.what());
      if (e.expired()) return Next::kList;
      backoff(std::chrono::duration_cast<std::chrono::milliseconds>(e.retry_after()));
      return restart();
    } catch (const std::exception& e) {
      // Broken connections surface with codes that mean nothing in particular (DESIGN.md):
      // all of them mean "watch again from the last resourceVersion".
      note_error(std::string("watch broken: ") + e.what());
      backoff(std::chrono::milliseconds(0));
      return restart();
    } catch (...) {
      note_error("watch broken");
      backoff(std::chrono::milliseconds(0));
      return restart();
    }
  }
}

void strip_unread_metadata(json& object) {
  if (!object.is_object() || !object.contains("metadata")) return;
  json& meta = object["metadata"];
  if (!meta.is_object()) return;
  meta.erase("managedFields");
  if (!meta.contains("annotations") || !meta["annotations"].is_object()) return;
  meta["annotations"].erase("kubectl.kubernetes.io/last-applied-configuration");
  if (meta["annotations"].empty()) meta.erase("annotations");
}

}  // namespace commgate::kube
