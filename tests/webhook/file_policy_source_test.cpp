// The file-backed policy source: loads, reloads on change, keeps the last good snapshot.
#include "webhook/file_policy_source.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "tests/webhook/webhook_test_support.h"

namespace commgate::webhook {
namespace COMMGATE_TEST_UNIT {

namespace fs = std::filesystem;
using commgate::testing::test_now;

class TempDirs {
 public:
  TempDirs() {
    root_ = fs::temp_directory_path() /
            ("commgate-webhook-" + std::to_string(::getpid()) + "-" + std::to_string(counter_++));
    fs::create_directories(policies());
    fs::create_directories(profiles());
  }
  ~TempDirs() { fs::remove_all(root_); }
  fs::path policies() const { return root_ / "policies"; }
  fs::path profiles() const { return root_ / "profiles"; }
  static void write(const fs::path& path, const std::string& text) {
    // Through a rename, so the inode changes even within one mtime tick.
    const fs::path tmp = path.string() + ".tmp~";
    std::ofstream(tmp) << text;
    fs::rename(tmp, path);
  }

 private:
  static inline int counter_ = 0;
  fs::path root_;
};

constexpr const char* kPolicy = R"(apiVersion: commgate.io/v1alpha1
kind: CommPolicy
metadata:
  name: strict
spec:
  maxCommShare: 0.1
---
apiVersion: v1
kind: Namespace
metadata:
  name: research
  labels:
    team: nlp
)";

FilePolicySource::Options options(const TempDirs& dirs, std::vector<std::string>* logs) {
  FilePolicySource::Options o;
  o.policy_dir = dirs.policies().string();
  o.profile_dir = dirs.profiles().string();
  o.clock = [] { return test_now(); };
  // Each record as its text line without the prefix: "info: message key=value ...".
  o.log = Logger([logs](const LogRecord& r) { logs->push_back(format_log_text(r, "")); });
  return o;
}

TEST(FilePolicySource, LoadsPoliciesNamespacesAndProfiles) {
  TempDirs dirs;
  TempDirs::write(dirs.policies() / "strict.yaml", kPolicy);
  TempDirs::write(dirs.profiles() / "pool-all.json", testing::a_profile(1.0, test_now()).dump());
  std::vector<std::string> logs;
  FilePolicySource source(options(dirs, &logs));
  EXPECT_EQ(source.snapshot(), nullptr) << "not ready before the first load";
  source.load_initial();
  const auto snap = source.snapshot();
  ASSERT_NE(snap, nullptr);
  ASSERT_EQ(snap->policies.size(), 1u);
  EXPECT_EQ(snap->policies[0].spec.max_comm_share, 0.1);
  EXPECT_EQ(snap->labels_of("research").at("team"), "nlp");
  EXPECT_NE(snap->profile("pool-all"), nullptr);
}

// `commgate webhook --policy-dir` says in its log which policies it enforces, at start and
// after every reload (issue 12: nothing said what had been loaded).
TEST(FilePolicySource, LogsWhatItLoadedAndWhatEachReloadHolds) {
  TempDirs dirs;
  TempDirs::write(dirs.policies() / "strict.yaml", kPolicy);
  TempDirs::write(dirs.profiles() / "pool-all.json", testing::a_profile(1.0, test_now()).dump());
  std::vector<std::string> logs;
  FilePolicySource source(options(dirs, &logs));
  source.load_initial();
  ASSERT_EQ(logs.size(), 1u);
  EXPECT_EQ(logs[0],
            "info: policy files loaded policies=1 policyNames=strict profiles=1 "
            "profileNames=pool-all namespaces=1 files=2");

  TempDirs::write(dirs.policies() / "second.yaml",
                  "apiVersion: commgate.io/v1alpha1\nkind: CommPolicy\nmetadata: {name: loose}\n"
                  "spec: {maxCommShare: 0.5}\n");
  ASSERT_TRUE(source.poll_now());
  ASSERT_EQ(logs.size(), 2u);
  EXPECT_EQ(logs[1],
            "info: policy files reloaded policies=2 policyNames=loose,strict profiles=1 "
            "profileNames=pool-all namespaces=1 files=3");

  fs::remove(dirs.profiles() / "pool-all.json");
  ASSERT_TRUE(source.poll_now());
  EXPECT_EQ(logs.back(),
            "info: policy files reloaded policies=2 policyNames=loose,strict profiles=0 "
            "profileNames=\"\" namespaces=1 files=2");
}

TEST(FilePolicySource, RefusesABadFileAtStartWithItsFieldPath) {
  TempDirs dirs;
  TempDirs::write(dirs.policies() / "bad.yaml",
                  "apiVersion: commgate.io/v1alpha1\nkind: CommPolicy\nmetadata: {name: x}\n"
                  "spec: {maxCommShare: 2}\n");
  std::vector<std::string> logs;
  FilePolicySource source(options(dirs, &logs));
  try {
    source.load_initial();
    FAIL() << "loaded";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("bad.yaml"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("spec.maxCommShare"), std::string::npos) << e.what();
  }
}

TEST(FilePolicySource, RefusesAMissingDirectoryAtStart) {
  FilePolicySource::Options o;
  o.policy_dir = "/nonexistent/commgate-policies";
  FilePolicySource source(o);
  EXPECT_THROW(source.load_initial(), std::runtime_error);
}

TEST(FilePolicySource, ReloadsOnChangeAndKeepsTheLastGoodSnapshotOnABadFile) {
  TempDirs dirs;
  TempDirs::write(dirs.policies() / "strict.yaml", kPolicy);
  std::vector<std::string> logs;
  FilePolicySource source(options(dirs, &logs));
  source.load_initial();
  EXPECT_FALSE(source.poll_now()) << "unchanged";

  TempDirs::write(dirs.policies() / "second.yaml",
                  "apiVersion: commgate.io/v1alpha1\nkind: CommPolicy\nmetadata: {name: loose}\n"
                  "spec: {maxCommShare: 0.5}\n");
  EXPECT_TRUE(source.poll_now());
  EXPECT_EQ(source.snapshot()->policies.size(), 2u);

  const auto good = source.snapshot();
  TempDirs::write(dirs.policies() / "second.yaml",
                  "apiVersion: commgate.io/v1alpha1\nkind: CommPolicy\nmetadata: {name: loose}\n"
                  "spec: {maxCommShare: 0.5, enforcementAction: block}\n");
  EXPECT_FALSE(source.poll_now());
  EXPECT_EQ(source.snapshot(), good) << "last good kept";
  EXPECT_EQ(source.reload_failures(), 1u);
  EXPECT_NE(source.metrics_text().find("commgate_webhook_file_reload_failures_total 1\n"),
            std::string::npos)
      << source.metrics_text();
  ASSERT_FALSE(logs.empty());
  EXPECT_NE(logs.back().find("spec.enforcementAction"), std::string::npos) << logs.back();

  fs::remove(dirs.policies() / "second.yaml");
  EXPECT_TRUE(source.poll_now());
  EXPECT_EQ(source.snapshot()->policies.size(), 1u);
}

TEST(FilePolicySource, PicksUpAChangeOnItsOwnWhenPolling) {
  TempDirs dirs;
  std::vector<std::string> logs;
  auto o = options(dirs, &logs);
  o.poll_interval = std::chrono::milliseconds(10);
  o.log = Logger::discard();  // the polling thread logs; the vector is not synchronized
  FilePolicySource source(o);
  source.load_initial();
  source.start_polling();
  TempDirs::write(dirs.policies() / "strict.yaml", kPolicy);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (source.snapshot()->policies.empty() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // polling, not waiting for state
  }
  EXPECT_EQ(source.snapshot()->policies.size(), 1u);
  source.stop();
}

TEST(FilePolicySource, RefusesAWrongKindInADirectory) {
  TempDirs dirs;
  TempDirs::write(dirs.profiles() / "p.yaml", kPolicy);
  std::vector<std::string> logs;
  FilePolicySource source(options(dirs, &logs));
  EXPECT_THROW(source.load_initial(), std::runtime_error);
}

TEST(FilePolicySource, ReadsBothKindsFromOneDirectoryGivenTwiceWithATrailingSlash) {
  TempDirs dirs;
  TempDirs::write(dirs.policies() / "strict.yaml", kPolicy);
  TempDirs::write(dirs.policies() / "pool-all.json", testing::a_profile(1.0, test_now()).dump());
  std::vector<std::string> logs;
  auto o = options(dirs, &logs);
  o.profile_dir = dirs.policies().string() + "/";
  FilePolicySource source(o);
  source.load_initial();
  EXPECT_EQ(source.snapshot()->policies.size(), 1u);
  EXPECT_EQ(source.snapshot()->profiles.size(), 1u);
}

}  // namespace
}  // namespace commgate::webhook
