#include "webhook/file_policy_source.h"

#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "core/field_errors.h"
#include "core/metrics.h"
#include "core/yaml_json.h"

namespace commgate::webhook {
namespace {

namespace fs = std::filesystem;

bool is_manifest(const fs::path& p) {
  const std::string ext = p.extension().string();
  return ext == ".yaml" || ext == ".yml" || ext == ".json";
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot read");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string kind_of(const nlohmann::json& doc) {
  if (!doc.is_object()) return "";
  auto k = doc.find("kind");
  return k != doc.end() && k->is_string() ? k->get<std::string>() : "";
}

}  // namespace

FilePolicySource::FilePolicySource(Options options) : options_(std::move(options)) {}

FilePolicySource::~FilePolicySource() {
  stop();
}

LogFields snapshot_summary(const Snapshot& snapshot) {
  std::string policy_names, profile_names;
  for (const CommPolicy& p : snapshot.policies)
    policy_names += (policy_names.empty() ? "" : ",") + p.metadata.name;
  for (const auto& [name, profile] : snapshot.profiles)
    profile_names += (profile_names.empty() ? "" : ",") + name;
  return {{"policies", snapshot.policies.size()},
          {"policyNames", policy_names},
          {"profiles", snapshot.profiles.size()},
          {"profileNames", profile_names},
          {"namespaces", snapshot.namespace_labels.size()}};
}

std::vector<FilePolicySource::FileSig> FilePolicySource::scan() const {
  std::vector<FileSig> out;
  std::error_code ec;
  const bool same_dir = !options_.policy_dir.empty() && !options_.profile_dir.empty() &&
                        fs::equivalent(options_.policy_dir, options_.profile_dir, ec);
  for (const bool policies : {true, false}) {
    const std::string& dir = policies ? options_.policy_dir : options_.profile_dir;
    if (dir.empty() || (same_dir && !policies)) continue;
    if (!fs::is_directory(dir, ec)) throw std::runtime_error(dir + ": not a directory");
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      if (!is_manifest(entry.path())) continue;
      struct stat st {};
      // stat follows symlinks: a ConfigMap volume's ..data swap changes the inode.
      if (::stat(entry.path().c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
      out.push_back({entry.path().string(), policies, !policies || same_dir,
                     static_cast<uint64_t>(st.st_ino), static_cast<int64_t>(st.st_size),
                     static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec});
    }
    if (ec) throw std::runtime_error(dir + ": " + ec.message());
  }
  std::sort(out.begin(), out.end(),
            [](const FileSig& a, const FileSig& b) { return a.path < b.path; });
  return out;
}

std::shared_ptr<const Snapshot> FilePolicySource::build(const std::vector<FileSig>& files) const {
  auto snap = std::make_shared<Snapshot>();
  std::vector<std::string> problems;
  for (const FileSig& file : files) {
    try {
      const auto docs = parse_manifests(read_file(file.path));
      for (size_t i = 0; i < docs.size(); ++i) {
        const std::string where = file.path + " (document " + std::to_string(i + 1) + ")";
        const std::string kind = kind_of(docs[i]);
        try {
          if (file.policies && kind == "CommPolicy") {
            snap->policies.push_back(parse_comm_policy(docs[i]));
          } else if (file.policies && kind == "Namespace") {
            const auto& meta = docs[i].at("metadata");
            const std::string ns = meta.at("name").get<std::string>();
            auto& labels = snap->namespace_labels[ns];
            if (meta.contains("labels"))
              labels = meta.at("labels").get<std::map<std::string, std::string>>();
            if (auto defaults = commgate_annotations_of_object(docs[i]); !defaults.empty())
              snap->namespace_commgate_annotations[ns] = std::move(defaults);
          } else if (file.profiles && kind == "CommProfile") {
            CommProfile p = parse_comm_profile(
                docs[i], options_.clock ? options_.clock() : std::chrono::system_clock::now());
            snap->profiles[p.metadata.name] = std::move(p);
          } else {
            const std::string allowed_kinds =
                file.policies ? (file.profiles ? "CommPolicy, Namespace or CommProfile"
                                               : "CommPolicy or Namespace")
                              : "CommProfile";
            problems.push_back(where + ": kind: must be " + allowed_kinds + ", got \"" + kind +
                               "\"");
          }
        } catch (const std::exception& e) {
          problems.push_back(where + ": " + e.what());
        }
      }
    } catch (const std::exception& e) {
      problems.push_back(file.path + ": " + e.what());
    }
  }
  if (!problems.empty()) {
    std::string message;
    for (const auto& p : problems) message += (message.empty() ? "" : "\n") + p;
    throw std::runtime_error(message);
  }
  snap->loaded_at = options_.clock ? options_.clock() : std::chrono::system_clock::now();
  return snap;
}

void FilePolicySource::load_initial() {
  std::lock_guard lock(poll_mu_);
  const auto files = scan();
  auto snap = build(files);
  LogFields fields = snapshot_summary(*snap);
  fields.emplace_back("files", files.size());
  options_.log.info("policy files loaded", std::move(fields));
  std::atomic_store(&snapshot_, std::move(snap));
  last_seen_ = files;
}

bool FilePolicySource::poll_now() {
  std::lock_guard lock(poll_mu_);
  std::vector<FileSig> files;
  try {
    files = scan();
  } catch (const std::exception& e) {
    if (!scan_failing_) {  // once per episode, not every poll
      reload_failures_.fetch_add(1, std::memory_order_relaxed);
      options_.log.error(std::string("policy files: ") + e.what() +
                         "; keeping the last good policies and profiles");
    }
    scan_failing_ = true;
    last_seen_.clear();
    return false;
  }
  scan_failing_ = false;
  if (files == last_seen_) return false;
  last_seen_ = files;
  std::shared_ptr<const Snapshot> snap;
  try {
    snap = build(files);
  } catch (const std::exception& e) {
    reload_failures_.fetch_add(1, std::memory_order_relaxed);
    options_.log.error(
        std::string("policy files rejected, keeping the last good policies and profiles:\n") +
        e.what());
    return false;
  }
  LogFields fields = snapshot_summary(*snap);
  fields.emplace_back("files", files.size());
  options_.log.info("policy files reloaded", std::move(fields));
  std::atomic_store(&snapshot_, std::move(snap));
  return true;
}

void FilePolicySource::start_polling() {
  std::lock_guard lock(thread_mu_);
  if (thread_.joinable()) return;
  stopping_ = false;
  thread_ = std::thread([this] {
    std::unique_lock lk(thread_mu_);
    while (!wake_.wait_for(lk, options_.poll_interval, [this] { return stopping_; })) {
      lk.unlock();
      poll_now();
      lk.lock();
    }
  });
}

void FilePolicySource::stop() {
  {
    std::lock_guard lock(thread_mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::shared_ptr<const Snapshot> FilePolicySource::snapshot() const {
  return std::atomic_load(&snapshot_);
}

std::string FilePolicySource::metrics_text() const {
  std::string out;
  append_prometheus_sample(out, "commgate_webhook_file_reload_failures_total", "counter",
                           "Changes to the policy and profile files that did not parse "
                           "(the last good snapshot was kept).",
                           static_cast<double>(reload_failures()));
  return out;
}

uint64_t FilePolicySource::reload_failures() const {
  return reload_failures_.load(std::memory_order_relaxed);
}

}  // namespace commgate::webhook
