// operator/kueue_check_state.h: the next state of commgate's entry in a Workload's
// status.admissionChecks, and the server-side-apply body that writes it.
#include "operator/kueue_check_state.h"

#include <gtest/gtest.h>

#include "tests/crds/schema_check.h"
#include "tests/operator/kueue_test_workloads.h"
#include "tests/support/builders.h"

namespace commgate::op::kueue {
namespace COMMGATE_TEST_UNIT {

using namespace std::chrono_literals;
using commgate::testing::test_now;
using nlohmann::json;
using Kind = CheckOutcome::Kind;

const TimePoint kEarlier = test_now() - 10min;

AdmissionCheckState entry(CheckState state, std::string message = "",
                          std::optional<int64_t> requeue = std::nullopt) {
  AdmissionCheckState e;
  e.name = "comm";
  e.state = state;
  e.message = std::move(message);
  e.last_transition_time = kEarlier;
  e.requeue_after_seconds = requeue;
  return e;
}

struct Case {
  std::string name;
  AdmissionCheckState current;
  CheckOutcome outcome;
  bool admitted = false;
  CheckState want_state;
  std::string want_message;  // substring
  bool want_time_kept;
  std::optional<int64_t> want_requeue = std::nullopt;
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.name;
}

std::vector<Case> cases() {
  return {
      {.name = "probe_running_stays_pending_and_keeps_its_time",
       .current = entry(CheckState::kPending, "Reset to Pending after eviction. Previously: Retry"),
       .outcome = {.kind = Kind::kProbePending, .message = "Probing pool-1a2b: 2 of 4 nodes"},
       .want_state = CheckState::kPending,
       .want_message = "Probing pool-1a2b: 2 of 4 nodes",
       .want_time_kept = true},
      {.name = "probe_failure_asks_kueue_to_retry_after_the_backoff",
       .current = entry(CheckState::kPending),
       .outcome = {.kind = Kind::kProbeFailed,
                   .message = "The probe of pool-1a2b could not schedule",
                   .retry_after = 300s},
       .want_state = CheckState::kRetry,
       .want_message = "could not schedule",
       .want_time_kept = false,
       .want_requeue = 300},
      {.name = "probe_failure_on_an_admitted_workload_never_retries",
       .current = entry(CheckState::kPending),
       .outcome = {.kind = Kind::kProbeFailed, .message = "The probe failed", .retry_after = 300s},
       .admitted = true,
       .want_state = CheckState::kPending,
       .want_message = "The probe failed (Not retried: the workload is admitted, and a Retry "
                       "would evict it.)",
       .want_time_kept = true},
      {.name = "within_policy_is_ready_with_the_numbers",
       .current = entry(CheckState::kPending, "Probing", 300),
       .outcome = {.kind = Kind::kWithinPolicy,
                   .message = "At 4 nodes the model predicts 18.4% communication"},
       .want_state = CheckState::kReady,
       .want_message = "18.4%",
       .want_time_kept = false},
      {.name = "over_policy_is_rejected_with_the_largest_count_that_passes",
       .current = entry(CheckState::kPending),
       .outcome = {.kind = Kind::kOverPolicy,
                   .message = "At 8 nodes the model predicts 61.0% communication, over 30.0%.",
                   .largest_passing_nodes = 3},
       .want_state = CheckState::kRejected,
       .want_message = "over 30.0%. The largest count that passes is 3 nodes.",
       .want_time_kept = false},
      {.name = "over_policy_says_when_no_count_passes",
       .current = entry(CheckState::kPending),
       .outcome = {.kind = Kind::kOverPolicy, .message = "", .largest_passing_nodes = 0},
       .want_state = CheckState::kRejected,
       .want_message = "No node count passes.",
       .want_time_kept = false},
      {.name = "bad_annotations_keep_it_pending_naming_the_annotation",
       .current = entry(CheckState::kPending),
       .outcome = {.kind = Kind::kBadAnnotations,
                   .message = "metadata.annotations[commgate.io/parameters]: write 350M"},
       .want_state = CheckState::kPending,
       .want_message = "metadata.annotations[commgate.io/parameters]",
       .want_time_kept = true},
      {.name = "no_model_is_ready_and_says_how_to_opt_in",
       .current = entry(CheckState::kPending),
       .outcome = {.kind = Kind::kNoModel, .message = ""},
       .want_state = CheckState::kReady,
       .want_message = "annotate the job with commgate.io/parameters",
       .want_time_kept = false},
      {.name = "no_model_under_a_policy_that_asks_for_one_is_rejected_as_said",
       .current = entry(CheckState::kPending),
       .outcome = {.kind = Kind::kNoModelRejected,
                   .message = "commgate rejected this job: it names no model"},
       .want_state = CheckState::kRejected,
       .want_message = "commgate rejected this job: it names no model",
       .want_time_kept = false},
  };
}

class NextCheckStateTest : public ::testing::TestWithParam<Case> {};

TEST_P(NextCheckStateTest, decides_the_entry) {
  const Case& c = GetParam();
  const AdmissionCheckState next = next_check_state(c.current, c.outcome, c.admitted, test_now());
  EXPECT_EQ(to_string(next.state), std::string(to_string(c.want_state)));
  EXPECT_EQ(next.name, "comm");
  EXPECT_NE(next.message.find(c.want_message), std::string::npos)
      << "want message containing: " << c.want_message << "\n got: " << next.message;
  EXPECT_EQ(next.last_transition_time, c.want_time_kept ? kEarlier : test_now());
  EXPECT_EQ(next.requeue_after_seconds, c.want_requeue);
  EXPECT_TRUE(check_state_changed(c.current, next));
}

INSTANTIATE_TEST_SUITE_P(KueueCheckState, NextCheckStateTest, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& p) { return p.param.name; });

TEST(KueueCheckState, a_no_model_rejection_names_no_node_count) {
  const AdmissionCheckState next = next_check_state(
      entry(CheckState::kPending), {.kind = Kind::kNoModelRejected, .message = "names no model"},
      false, test_now());
  EXPECT_EQ(next.message, "names no model");
}

TEST(KueueCheckState, an_entry_kueue_added_without_a_time_gets_one) {
  AdmissionCheckState current = entry(CheckState::kPending);
  current.last_transition_time.reset();
  const AdmissionCheckState next = next_check_state(
      current, {.kind = Kind::kProbePending, .message = "Probing"}, false, test_now());
  EXPECT_EQ(next.last_transition_time, test_now());
}

TEST(KueueCheckState, the_same_outcome_twice_writes_nothing_the_second_time) {
  const CheckOutcome probing{.kind = Kind::kProbePending, .message = "Probing pool-1a2b"};
  const AdmissionCheckState first =
      next_check_state(entry(CheckState::kPending, "", 300), probing, false, test_now());
  ASSERT_TRUE(check_state_changed(entry(CheckState::kPending, "", 300), first));
  // As read back after the apply: requeueAfterSeconds cleared to 0.
  AdmissionCheckState applied = first;
  applied.requeue_after_seconds = 0;
  const AdmissionCheckState second = next_check_state(applied, probing, false, test_now() + 1min);
  EXPECT_FALSE(check_state_changed(applied, second));
  EXPECT_EQ(second.last_transition_time, first.last_transition_time);
}

TEST(KueueCheckState, retry_delays_beyond_int32_are_capped) {
  const AdmissionCheckState next = next_check_state(
      entry(CheckState::kPending),
      {.kind = Kind::kProbeFailed, .message = "", .retry_after = 1000000h}, false, test_now());
  EXPECT_EQ(next.requeue_after_seconds, 2147483647);
}

TEST(KueueCheckState, messages_are_cut_to_what_the_crd_accepts) {
  const AdmissionCheckState next = next_check_state(
      entry(CheckState::kPending),
      {.kind = Kind::kWithinPolicy, .message = std::string(40000, 'x')}, false, test_now());
  EXPECT_EQ(next.message.size(), kMaxCheckMessageBytes);
  EXPECT_EQ(next.message.substr(next.message.size() - 3), "...");
}

Workload a_workload() {
  return read_workload(
      testing::a_pytorchjob_workload().reserved().check("comm", "Pending").build());
}

TEST(KueueCheckStateApply, holds_only_our_entry_with_its_four_fields_and_the_preconditions) {
  AdmissionCheckState current = entry(CheckState::kPending);
  current.retry_count = 2;
  const AdmissionCheckState next = next_check_state(
      current, {.kind = Kind::kWithinPolicy, .message = "fits"}, false, test_now());
  EXPECT_EQ(next.retry_count, 2) << "Kueue's count is not ours to change";
  const json body = check_state_apply(a_workload(), current, next);
  const json want = {
      {"apiVersion", "kueue.x-k8s.io/v1beta2"},
      {"kind", "Workload"},
      {"metadata",
       {{"name", "job-train-1a2b3"},
        {"namespace", "ml"},
        {"uid", "wl-uid-1"},
        {"resourceVersion", "4711"}}},
      {"status",
       {{"admissionChecks", json::array({{{"name", "comm"},
                                          {"state", "Ready"},
                                          {"message", "fits"},
                                          {"lastTransitionTime", format_rfc3339(test_now())}}})}}}};
  EXPECT_EQ(body, want) << body.dump(2);
}

TEST(KueueCheckStateApply, a_retry_carries_its_delay) {
  const AdmissionCheckState current = entry(CheckState::kPending);
  const AdmissionCheckState next = next_check_state(
      current, {.kind = Kind::kProbeFailed, .message = "failed", .retry_after = 90s}, false,
      test_now());
  const json body = check_state_apply(a_workload(), current, next);
  EXPECT_EQ(body["status"]["admissionChecks"][0]["state"], "Retry");
  EXPECT_EQ(body["status"]["admissionChecks"][0]["requeueAfterSeconds"], 90);
}

// Kueue's reset after a Retry keeps requeueAfterSeconds on the Pending entry, and its own
// forced applies co-own it: ours must write it empty to clear it.
TEST(KueueCheckStateApply, a_delay_left_from_a_retry_is_applied_empty) {
  const AdmissionCheckState current =
      entry(CheckState::kPending, "Reset to Pending after eviction. Previously: Retry", 300);
  const AdmissionCheckState next = next_check_state(
      current, {.kind = Kind::kWithinPolicy, .message = "fits"}, false, test_now());
  EXPECT_EQ(next.requeue_after_seconds, std::nullopt);
  const json body = check_state_apply(a_workload(), current, next);
  EXPECT_EQ(body["status"]["admissionChecks"][0]["requeueAfterSeconds"], 0) << body.dump();
}

TEST(KueueCheckStateApply, pod_set_updates_on_our_entry_are_applied_empty) {
  AdmissionCheckState current = entry(CheckState::kPending);
  current.pod_set_updates = json::array({{{"name", "worker"}, {"labels", {{"a", "b"}}}}});
  const AdmissionCheckState next =
      next_check_state(current, {.kind = Kind::kProbePending, .message = ""}, false, test_now());
  EXPECT_TRUE(check_state_changed(current, next));
  const json body = check_state_apply(a_workload(), current, next);
  EXPECT_EQ(body["status"]["admissionChecks"][0]["podSetUpdates"], json::array());
  EXPECT_EQ(body["status"]["admissionChecks"][0]["message"], "") << "an empty message is applied";
}

TEST(KueueCheckStateApply, the_status_it_applies_passes_the_upstream_crd_schema) {
  AdmissionCheckState current = entry(CheckState::kPending, "", 300);
  current.pod_set_updates = json::array({{{"name", "worker"}}});
  for (const CheckOutcome& outcome :
       {CheckOutcome{.kind = Kind::kProbeFailed, .message = "m", .retry_after = 60s},
        CheckOutcome{.kind = Kind::kOverPolicy, .message = "m", .largest_passing_nodes = 2}}) {
    const AdmissionCheckState next = next_check_state(current, outcome, false, test_now());
    const json body = check_state_apply(a_workload(), current, next);
    const json* status = commgate::testing::schema_at(testing::workload_v1beta2_schema(), "status");
    ASSERT_NE(status, nullptr);
    const auto issues = commgate::testing::validate(*status, body["status"], "status");
    EXPECT_TRUE(issues.empty()) << commgate::testing::to_string(issues);
  }
}

TEST(KueueCheckState, a_state_change_is_an_event_in_kueues_words) {
  const AdmissionCheckState current = entry(CheckState::kPending);
  const AdmissionCheckState ready = next_check_state(
      current, {.kind = Kind::kWithinPolicy, .message = "fits at 4 nodes"}, false, test_now());
  EXPECT_EQ(check_state_event(current, ready),
            "Admission check comm updated state from Pending to Ready with message: fits at 4 "
            "nodes");
  const AdmissionCheckState still = next_check_state(
      current, {.kind = Kind::kProbePending, .message = "Probing"}, false, test_now());
  EXPECT_EQ(check_state_event(current, still), std::nullopt);
}

// ---- the bound on a Pending wait ----

const PendingBound kBound{
    .max_pending = 30min, .retry_after = 60s, .set_by = "spec.admissionCheck.maxPendingSeconds"};
const CheckOutcome kProbing{.kind = Kind::kProbePending,
                            .message =
                                "waiting for the measurement of pool pool-1a2b: 2 of 4 "
                                "nodes",
                            .pool = "pool-1a2b"};

struct BoundCase {
  std::string name;
  CheckOutcome outcome;
  std::optional<std::chrono::seconds> waited;  // now - since; nullopt: no since
  Kind want_kind;
  std::optional<std::chrono::nanoseconds> want_wait_left = std::nullopt;
  std::string want_message = "";  // substring
  std::chrono::seconds want_retry_after{0};
};

void PrintTo(const BoundCase& c, std::ostream* os) {
  *os << c.name;
}

std::vector<BoundCase> bound_cases() {
  return {
      {.name = "a_probe_wait_within_the_bound_stays_pending_with_the_time_left",
       .outcome = kProbing,
       .waited = 10min,
       .want_kind = Kind::kProbePending,
       .want_wait_left = 20min,
       .want_message = "2 of 4 nodes"},
      {.name = "a_probe_wait_at_the_bound_is_a_retry",
       .outcome = kProbing,
       .waited = 30min,
       .want_kind = Kind::kProbeFailed,
       .want_message = "commgate waited 30m for the measurement of pool pool-1a2b, longer than "
                       "30m (spec.admissionCheck.maxPendingSeconds), and releases the "
                       "workload's quota until it is queued again. Waiting for: waiting for "
                       "the measurement of pool pool-1a2b: 2 of 4 nodes",
       .want_retry_after = 60s},
      {.name = "a_probe_wait_past_the_bound_says_how_long_in_whole_minutes",
       .outcome = kProbing,
       .waited = 1h + 5min + 59s,
       .want_kind = Kind::kProbeFailed,
       .want_message = "commgate waited 1h5m for the measurement of pool pool-1a2b",
       .want_retry_after = 60s},
      {.name = "a_wait_for_something_else_is_not_bounded",
       .outcome = {.kind = Kind::kProbePending, .message = "the pool has 2 of 4 nodes"},
       .waited = 2h,
       .want_kind = Kind::kProbePending,
       .want_message = "the pool has 2 of 4 nodes"},
      {.name = "bad_annotations_are_not_bounded",
       .outcome = {.kind = Kind::kBadAnnotations, .message = "metadata.annotations"},
       .waited = 2h,
       .want_kind = Kind::kBadAnnotations,
       .want_message = "metadata.annotations"},
      {.name = "an_entry_not_pending_is_not_bounded",
       .outcome = kProbing,
       .waited = std::nullopt,
       .want_kind = Kind::kProbePending,
       .want_message = "2 of 4 nodes"},
      {.name = "a_decision_passes_as_it_is",
       .outcome = {.kind = Kind::kWithinPolicy, .message = "fits"},
       .waited = 2h,
       .want_kind = Kind::kWithinPolicy,
       .want_message = "fits"},
  };
}

class BoundPendingWaitTest : public ::testing::TestWithParam<BoundCase> {};

TEST_P(BoundPendingWaitTest, bounds_the_wait) {
  const BoundCase& c = GetParam();
  std::optional<TimePoint> since;
  if (c.waited) since = test_now() - *c.waited;
  const BoundedOutcome got = bound_pending_wait(c.outcome, since, kBound, test_now());
  EXPECT_EQ(static_cast<int>(got.outcome.kind), static_cast<int>(c.want_kind));
  EXPECT_EQ(got.wait_left, c.want_wait_left);
  EXPECT_NE(got.outcome.message.find(c.want_message), std::string::npos)
      << "want message containing: " << c.want_message << "\n got: " << got.outcome.message;
  EXPECT_EQ(got.outcome.retry_after, c.want_retry_after);
}

INSTANTIATE_TEST_SUITE_P(KueueCheckState, BoundPendingWaitTest, ::testing::ValuesIn(bound_cases()),
                         [](const ::testing::TestParamInfo<BoundCase>& p) { return p.param.name; });

TEST(KueueCheckState, the_wait_counts_from_the_later_of_the_entry_and_the_quota) {
  const AdmissionCheckState pending = entry(CheckState::kPending);  // since kEarlier
  EXPECT_EQ(pending_wait_since(pending, std::nullopt), kEarlier);
  EXPECT_EQ(pending_wait_since(pending, kEarlier - 1h), kEarlier);
  EXPECT_EQ(pending_wait_since(pending, kEarlier + 5min), kEarlier + 5min);
  EXPECT_EQ(pending_wait_since(entry(CheckState::kRetry), kEarlier), std::nullopt);
  AdmissionCheckState untimed = pending;
  untimed.last_transition_time.reset();
  EXPECT_EQ(pending_wait_since(untimed, kEarlier), std::nullopt);
}

TEST(KueueCheckState, a_bound_past_on_an_admitted_workload_is_held_back) {
  const BoundedOutcome over = bound_pending_wait(kProbing, test_now() - 31min, kBound, test_now());
  const AdmissionCheckState next =
      next_check_state(entry(CheckState::kPending), over.outcome, true, test_now());
  EXPECT_EQ(next.state, CheckState::kPending);
  EXPECT_EQ(next.requeue_after_seconds, std::nullopt);
  EXPECT_NE(next.message.find("a Retry would evict it"), std::string::npos) << next.message;
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::op::kueue
