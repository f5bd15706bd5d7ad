// A PolicySource fed from manifest files (`--policy-dir`, `--profile-dir`): for running
// without a cluster and for tests. YAML or JSON files (*.yaml, *.yml, *.json), any number
// of documents each. The policy directory holds CommPolicy documents (and optionally
// v1 Namespace documents, whose labels the policies' namespaceSelector reads); the
// profile directory holds CommProfile documents. The files are polled: when any file's
// size, mtime or inode changes, or a file appears or goes, the whole set is read again
// and swapped in at once. A set that does not parse is logged with every field path and
// the last good snapshot is kept. Every load and reload logs what it holds (how many
// policies, profiles and namespaces, and their names), so an operator of the webhook
// sees in its log which policies it enforces.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/log.h"
#include "webhook/policy_source.h"

namespace commgate::webhook {

// What a snapshot holds, as log fields: policies, policyNames, profiles, profileNames,
// namespaces (counts, and names comma-separated in order).
LogFields snapshot_summary(const Snapshot& snapshot);

class FilePolicySource : public PolicySource {
 public:
  struct Options {
    std::string policy_dir;   // "" : no policies (the built-in default applies)
    std::string profile_dir;  // "" : no profiles (every multi-node job is unmeasured)
    std::chrono::milliseconds poll_interval{2000};
    Logger log;                        // default: stderr
    std::function<TimePoint()> clock;  // default: system clock
  };

  explicit FilePolicySource(Options options);
  ~FilePolicySource() override;  // stop()
  FilePolicySource(const FilePolicySource&) = delete;
  FilePolicySource& operator=(const FilePolicySource&) = delete;

  // Reads every file once. Throws std::runtime_error naming the file and field paths when a
  // directory is missing or a file does not parse: at start-up that is misconfiguration.
  void load_initial();
  // Reads again when the files changed; true when a new snapshot was swapped in. A set
  // that does not parse is logged once per change and the old snapshot kept.
  bool poll_now();
  // Calls poll_now() every poll_interval on a thread of its own, until stop().
  void start_polling();
  void stop();

  std::shared_ptr<const Snapshot> snapshot() const override;
  uint64_t reload_failures() const;
  std::string metrics_text() const override;

 private:
  struct FileSig {
    std::string path;
    bool policies = false;  // from policy_dir: CommPolicy and Namespace documents
    bool profiles = false;  // from profile_dir: CommProfile documents (both: same dir)
    uint64_t inode = 0;
    int64_t size = 0;
    int64_t mtime_ns = 0;
    bool operator==(const FileSig&) const = default;
  };
  std::vector<FileSig> scan() const;
  std::shared_ptr<const Snapshot> build(const std::vector<FileSig>& files) const;

  const Options options_;
  std::shared_ptr<const Snapshot> snapshot_;  // std::atomic_load / atomic_store
  std::mutex poll_mu_;                        // one poll at a time; guards last_seen_
  std::vector<FileSig> last_seen_;
  bool scan_failing_ = false;
  std::atomic<uint64_t> reload_failures_{0};

  std::mutex thread_mu_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace commgate::webhook
