// Why a workload failed, from its pods (operator/pod_failure.h): the error line of a
// failed rank's log tail, as torchrun and Python write them, and the rank that failed
// first.
#include "operator/pod_failure.h"

#include <gtest/gtest.h>

#include <fstream>
#include <ostream>
#include <sstream>
#include <string>

namespace commgate::op {
namespace COMMGATE_TEST_UNIT {

using nlohmann::json;

struct LineCase {
  std::string name, log, want;
};

void PrintTo(const LineCase& c, std::ostream* os) {
  *os << c.name;
}

class FailureLine : public ::testing::TestWithParam<LineCase> {};

TEST_P(FailureLine, says_why) {
  EXPECT_EQ(failure_line(GetParam().log), GetParam().want);
}

// torch 1.13's torchrun after a child failed: the child's traceback, then the agent's
// ChildFailedError block (what the sim's trial saw, issue #20 defect 4).
const char* const kTorchrunTail =
    "Traceback (most recent call last):\n"
    "  File \"/app/train.py\", line 12, in <module>\n"
    "    dist.init_process_group(\"gloo\")\n"
    "RuntimeError: The server socket has failed to bind to [::]:29500 (errno: 98 - Address "
    "already in use).\n"
    "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: 0\n"
    "Traceback (most recent call last):\n"
    "  File \"/usr/bin/torchrun\", line 33, in <module>\n"
    "    raise ChildFailedError(\n"
    "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n"
    "============================================================\n"
    "train.py FAILED\n"
    "------------------------------------------------------------\n"
    "Root Cause (first observed failure):\n"
    "  exitcode  : 1 (pid: 41)\n"
    "============================================================\n";

INSTANTIATE_TEST_SUITE_P(
    PodFailure, FailureLine,
    ::testing::Values(
        LineCase{"the_childs_exception_not_torchruns_wrapper", kTorchrunTail,
                 "RuntimeError: The server socket has failed to bind to [::]:29500 (errno: 98 "
                 "- Address already in use)."},
        LineCase{"a_plain_python_traceback",
                 "Traceback (most recent call last):\n  File \"t.py\", line 1\n"
                 "torch.distributed.DistBackendError: NCCL error in: init.cpp:123\n",
                 "torch.distributed.DistBackendError: NCCL error in: init.cpp:123"},
        LineCase{"the_last_of_two_exceptions", "ValueError: first\nKeyError: 'lr'\n",
                 "KeyError: 'lr'"},
        LineCase{"an_exception_without_a_message", "...\nKeyboardInterrupt\n", "KeyboardInterrupt"},
        LineCase{"a_rank_prefix_is_dropped", "[rank1]: OSError: [Errno 28] No space left\n",
                 "OSError: [Errno 28] No space left"},
        LineCase{"an_indented_traceback_line_is_not_the_error",
                 "    raise RuntimeError(x)\nsegfault in worker\n", "segfault in worker"},
        LineCase{"no_exception_the_last_line_with_words",
                 "terminate called after throwing an instance of 'c10::Error'\n"
                 "  what():  CUDA out of memory\n\n=====\n",
                 "what():  CUDA out of memory"},
        LineCase{"colours_and_carriage_returns_dropped", "\x1b[31mRuntimeError: boom\x1b[0m\r\n",
                 "RuntimeError: boom"},
        LineCase{"nothing_to_say", "\n=====\n---\n", ""}, LineCase{"empty", "", ""},
        LineCase{"a_word_ending_in_error_mid_sentence_is_not_an_exception",
                 "Errors were found\nsee above\n", "see above"}),
    [](const ::testing::TestParamInfo<LineCase>& p) { return p.param.name; });

std::string testdata(const std::string& name) {
  std::ifstream in(std::string(COMMGATE_SOURCE_DIR) + "/tests/operator/testdata/" + name);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_FALSE(text.str().empty()) << name;
  return text.str();
}

// The last 2048 bytes of Debian's torch 1.13 torchrun (PET_REDIRECTS=1 PET_TEE=1, one
// rank) as FallbackToLogsOnError keeps them: a script that raised, and one that does not
// exist (python's "can't open file" is the tail's first line: torchrun's traceback fills
// the rest; a longer path would push it out, leaving torchrun's summary).
TEST(FailureLine, reads_real_torchrun_output) {
  EXPECT_EQ(failure_line(testdata("torchrun_child_raised.log")),
            "RuntimeError: The server socket has failed to bind");
  const std::string report = testdata("torchrun_report_only.log");
  EXPECT_EQ(failure_line(report),
            "/usr/bin/python3.11: can't open file '/app/trian.py': [Errno 2] No such file or "
            "directory");
  EXPECT_EQ(failure_line(report.substr(report.find('\n') + 1)),
            "/app/trian.py FAILED (rank 0 (local_rank: 0), exitcode 2 (pid: 42)); the rank's own "
            "error is earlier in the pod's log");
}

TEST(FailureLine, a_long_line_is_cut_on_a_character_boundary) {
  const std::string line = "RuntimeError: " + std::string(400, 'x') + "\n";
  const std::string cut = failure_line(line, 50);
  EXPECT_EQ(cut, "RuntimeError: " + std::string(36, 'x') + "...");
  // "ValueError: " is 12 bytes; each é two.
  const std::string fits = "ValueError: " + std::string(36, 'a') + "\xc3\xa9\xc3\xa9";
  EXPECT_EQ(failure_line(fits, 50), "ValueError: " + std::string(36, 'a') + "\xc3\xa9...");
  const std::string split = "ValueError: " + std::string(37, 'a') + "\xc3\xa9\xc3\xa9";
  EXPECT_EQ(failure_line(split, 50), "ValueError: " + std::string(37, 'a') + "...")
      << "a two-byte character across the cut is left out, not split";
}

// A pod of the workload's Indexed Job, its container terminated with `code` at `finished`.
json failed_pod(const std::string& name, int index, int code, const std::string& finished,
                const std::string& message) {
  json terminated = {
      {"exitCode", code}, {"reason", code == 0 ? "Completed" : "Error"}, {"finishedAt", finished}};
  if (!message.empty()) terminated["message"] = message;
  return {{"metadata",
           {{"name", name},
            {"labels", {{"batch.kubernetes.io/job-completion-index", std::to_string(index)}}}}},
          {"status",
           {{"phase", code == 0 ? "Succeeded" : "Failed"},
            {"containerStatuses",
             json::array({{{"name", "trainer"}, {"state", {{"terminated", terminated}}}}})}}}};
}

TEST(FirstPodFailure, names_the_rank_that_failed_first_and_its_error_line) {
  const std::vector<json> pods = {
      failed_pod("bert-0-a", 0, 1, "2026-12-05T10:00:09Z",
                 "RuntimeError: Connection reset by peer\n"),
      failed_pod("bert-1-b", 1, 1, "2026-12-05T10:00:02Z", kTorchrunTail),
      failed_pod("bert-2-c", 2, 0, "2026-12-05T10:00:01Z", ""),
  };
  EXPECT_EQ(first_pod_failure(pods),
            "pod bert-1-b (node rank 1) exited with code 1: RuntimeError: The server socket has "
            "failed to bind to [::]:29500 (errno: 98 - Address already in use).");
}

TEST(FirstPodFailure, ties_go_to_the_lower_rank_and_missing_parts_are_left_out) {
  EXPECT_EQ(
      first_pod_failure({failed_pod("b-1", 1, 2, "t", "x"), failed_pod("b-0", 0, 137, "t", "")}),
      "pod b-0 (node rank 0) exited with code 137");
  json unindexed = failed_pod("loose", 0, 3, "", "ValueError: v\n");
  unindexed["metadata"].erase("labels");
  EXPECT_EQ(first_pod_failure({unindexed}), "pod loose exited with code 3: ValueError: v");
}

TEST(FirstPodFailure, nothing_when_no_container_failed) {
  EXPECT_EQ(first_pod_failure({}), "");
  EXPECT_EQ(first_pod_failure({failed_pod("ok", 0, 0, "t", "")}), "");
  EXPECT_EQ(first_pod_failure(
                {json("garbage"), json::object(), json{{"status", {{"containerStatuses", 7}}}}}),
            "");
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::op
