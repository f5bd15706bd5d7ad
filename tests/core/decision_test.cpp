// The decision, table-driven. The scenario: a 25M-parameter fp32 model (100 MB of
// gradients), a 300 ms compute step, a link of 0.5 GB/s bus bandwidth. The model
// predicts 18.3% exposed communication at 2 nodes, 30.7% at 3 and 35.6% at 4.
#include "core/decision.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <set>

#include "core/policy_selection.h"
#include "core/significant_digits.h"
#include "core/time_format.h"
#include "tests/support/builders.h"

namespace commgate {
namespace COMMGATE_TEST_UNIT {

using namespace std::chrono_literals;
using testing::a_measurement;
using testing::a_policy;
using testing::a_training_job;
using testing::test_now;

// The probe's own DDP step at `nodes`, as measurement_from_probe passes it on.
Measurement with_ddp_step(Measurement m, int nodes, double step_ms) {
  DdpStepResult s;
  s.step_time_ms = step_ms;
  s.compute_only_step_time_ms = m.compute->total_s() * 1e3;
  s.exposed_comm_ms = step_ms - s.compute_only_step_time_ms;
  s.comm_share = s.exposed_comm_ms / step_ms;
  s.bucket_cap_bytes = 25.0 * 1024 * 1024;
  s.first_bucket_bytes = 1.0 * 1024 * 1024;
  m.measured_ddp_step = s;
  m.measured_ddp_nodes = nodes;
  m.measured_ddp_procs_per_node = 1;
  return m;
}

CommPolicy with_max_extrapolation(CommPolicy p, int k) {
  p.spec.max_extrapolation = k;
  return p;
}

CommPolicy with_probe_max_nodes(CommPolicy p, int max_nodes) {
  p.spec.probe.max_nodes = max_nodes;
  return p;
}

// The link measured `link_age` ago and this model's compute step `compute_age` ago: a
// CommProfile whose link a probe of another model has measured since.
Measurement with_ages(Measurement m, std::chrono::hours link_age, std::chrono::hours compute_age) {
  m.measured_at = test_now() - link_age;
  m.compute_measured_at = test_now() - compute_age;
  return m;
}

struct Case {
  std::string name;
  testing::TrainingJobBuilder job = a_training_job("bert").nodes(4).params(25e6);
  CommPolicy policy = a_policy().build();
  std::optional<Measurement> measurement =
      a_measurement().busbw_gbps(0.5).latency_us(200).compute_ms(300).build();
  Requester requester = {};
  Action want_action;
  int want_admitted;
  std::string want_reason;
  std::string want_message;  // substring
  std::optional<Action> want_would = std::nullopt;
};

std::vector<Case> cases() {
  std::vector<Case> c;
  c.push_back({.name = "admits_when_every_count_is_under_policy",
               .policy = a_policy().max_comm_share(0.40).build(),
               .want_action = Action::kAdmit,
               .want_admitted = 4,
               .want_reason = reason::kWithinPolicy,
               .want_message = "At 4 nodes the model predicts 35.6%"});
  c.push_back({.name = "downsizes_to_largest_count_under_policy",
               .want_action = Action::kDownsize,
               .want_admitted = 2,
               .want_reason = reason::kDownsized,
               .want_message = "Downsized from 4 to 2 nodes"});
  c.push_back({.name = "downsize_message_quotes_the_measurement",
               .want_action = Action::kDownsize,
               .want_admitted = 2,
               .want_reason = reason::kDownsized,
               .want_message = "measured all-reduce busbw 0.5 GB/s (gloo over socket, 2 nodes "
                               "probed), compute step 300 ms"});
  c.push_back({.name = "downsize_respects_min_nodes",
               .job = a_training_job("bert").nodes(4).min_nodes(3).params(25e6),
               .want_action = Action::kDeny,
               .want_admitted = 0,
               .want_reason = reason::kNoCountMeetsPolicy,
               .want_message = "Even spec.minNodes (3) does not pass"});
  c.push_back({.name = "min_nodes_equal_to_a_passing_count_downsizes_to_it",
               .job = a_training_job("bert").nodes(4).min_nodes(3).params(25e6),
               .policy = a_policy().max_comm_share(0.32).build(),
               .want_action = Action::kDownsize,
               .want_admitted = 3,
               .want_reason = reason::kDownsized,
               .want_message = "to 3 nodes"});
  c.push_back({.name = "deny_policy_names_the_largest_passing_count",
               .policy = a_policy().action(EnforcementAction::kDeny).build(),
               .want_action = Action::kDeny,
               .want_admitted = 0,
               .want_reason = reason::kDenied,
               .want_message = "The largest count that passes is 2 nodes"});
  c.push_back({.name = "deny_message_names_policy_maximum",
               .policy = a_policy().action(EnforcementAction::kDeny).named("team-a").build(),
               .want_action = Action::kDeny,
               .want_admitted = 0,
               .want_reason = reason::kDenied,
               .want_message = "CommPolicy team-a allows at most 30.0% communication"});
  c.push_back({.name = "warn_admits_unchanged_and_says_what_downsize_would_do",
               .policy = a_policy().action(EnforcementAction::kWarn).build(),
               .want_action = Action::kWarn,
               .want_admitted = 4,
               .want_reason = reason::kWarned,
               .want_message = "Admitted anyway",
               .want_would = Action::kDownsize});
  c.push_back({.name = "dryrun_admits_and_reports_the_would_be_downsize",
               .policy = a_policy().action(EnforcementAction::kDryRun).build(),
               .want_action = Action::kAdmit,
               .want_admitted = 4,
               .want_reason = reason::kDryRun,
               .want_message = "Dry run: would downsize to 2 nodes",
               .want_would = Action::kDownsize});
  c.push_back({.name = "dryrun_reports_a_would_be_denial",
               .job = a_training_job("bert").nodes(4).min_nodes(4).params(25e6),
               .policy = a_policy().action(EnforcementAction::kDryRun).build(),
               .want_action = Action::kAdmit,
               .want_admitted = 4,
               .want_reason = reason::kDryRun,
               .want_message = "Dry run: would deny",
               .want_would = Action::kDeny});
  c.push_back({.name = "min_scaling_efficiency_is_enforced_too",
               .policy = a_policy().max_comm_share(0.9).min_scaling_efficiency(0.75).build(),
               .want_action = Action::kDownsize,
               .want_admitted = 2,
               .want_reason = reason::kDownsized,
               .want_message = "requires scaling efficiency >= 75.0%"});
  c.push_back({.name = "gates_without_measurement",
               .measurement = std::nullopt,
               .want_action = Action::kGate,
               .want_admitted = 4,
               .want_reason = reason::kNoMeasurement,
               .want_message = "suspended until commgate has probed"});
  c.push_back({.name = "admits_without_measurement_when_policy_says_admit",
               .policy = a_policy().on_missing(MissingMeasurementAction::kAdmit).build(),
               .measurement = std::nullopt,
               .want_action = Action::kAdmit,
               .want_admitted = 4,
               .want_reason = reason::kNoMeasurement,
               .want_message = "admitted unmeasured"});
  c.push_back({.name = "denies_without_measurement_when_policy_says_deny",
               .policy = a_policy().on_missing(MissingMeasurementAction::kDeny).build(),
               .measurement = std::nullopt,
               .want_action = Action::kDeny,
               .want_admitted = 0,
               .want_reason = reason::kNoMeasurement,
               .want_message = "onMissingMeasurement: deny"});
  c.push_back({.name = "stale_measurement_gates",
               .measurement = a_measurement().busbw_gbps(0.5).measured_at(test_now() - 25h).build(),
               .want_action = Action::kGate,
               .want_admitted = 4,
               .want_reason = reason::kStaleMeasurement,
               .want_message = "older than measurementTTL 24h"});
  c.push_back(
      {.name = "measurement_just_inside_ttl_is_used",
       .measurement =
           a_measurement().busbw_gbps(0.5).latency_us(200).measured_at(test_now() - 24h).build(),
       .want_action = Action::kDownsize,
       .want_admitted = 2,
       .want_reason = reason::kDownsized,
       .want_message = "Downsized"});
  c.push_back({.name = "short_ttl_makes_an_hour_old_measurement_stale",
               .policy = a_policy().ttl(30min).build(),
               .want_action = Action::kGate,
               .want_admitted = 4,
               .want_reason = reason::kStaleMeasurement,
               .want_message = "measurementTTL 30m"});
  c.push_back(
      {.name = "missing_compute_gates_and_says_why",
       .measurement = a_measurement()
                          .no_compute("no compute measurement for a 25M-parameter fp32 model")
                          .build(),
       .want_action = Action::kGate,
       .want_admitted = 4,
       .want_reason = reason::kNoCompute,
       .want_message = "no compute measurement for a 25M-parameter"});
  c.push_back({.name = "exempt_user_bypasses_policy",
               .policy = a_policy().action(EnforcementAction::kDeny).exempt_user("alice").build(),
               .requester = {"alice", {}},
               .want_action = Action::kAdmit,
               .want_admitted = 4,
               .want_reason = reason::kExempt,
               .want_message = "alice is exempt"});
  c.push_back(
      {.name = "exempt_group_bypasses_policy",
       .policy = a_policy().action(EnforcementAction::kDeny).exempt_group("ml-admins").build(),
       .requester = {"bob", {"system:authenticated", "ml-admins"}},
       .want_action = Action::kAdmit,
       .want_admitted = 4,
       .want_reason = reason::kExempt,
       .want_message = "exempt"});
  c.push_back({.name = "exempt_service_account_bypasses_policy",
               .policy = a_policy()
                             .action(EnforcementAction::kDeny)
                             .exempt_service_account("bench/nightly")
                             .build(),
               .requester = {"system:serviceaccount:bench:nightly", {}},
               .want_action = Action::kAdmit,
               .want_admitted = 4,
               .want_reason = reason::kExempt,
               .want_message = "exempt"});
  c.push_back({.name = "non_exempt_user_is_judged",
               .policy = a_policy().action(EnforcementAction::kDeny).exempt_user("alice").build(),
               .requester = {"mallory", {"alice"}},
               .want_action = Action::kDeny,
               .want_admitted = 0,
               .want_reason = reason::kDenied,
               .want_message = "over the limit"});
  c.push_back({.name = "single_node_is_always_admitted",
               .job = a_training_job("bert").nodes(1).params(25e6),
               .measurement = std::nullopt,
               .want_action = Action::kAdmit,
               .want_admitted = 1,
               .want_reason = reason::kSingleNode,
               .want_message = "single-node"});
  c.push_back({.name = "downsizes_to_one_node_when_only_one_passes",
               .measurement = a_measurement().busbw_gbps(0.01).build(),
               .want_action = Action::kDownsize,
               .want_admitted = 1,
               .want_reason = reason::kDownsized,
               .want_message = "Downsized from 4 to 1 node"});
  c.push_back({.name = "no_count_passes_on_a_very_slow_link",
               .job = a_training_job("bert").nodes(4).min_nodes(2).params(25e6),
               .measurement = a_measurement().busbw_gbps(0.01).build(),
               .want_action = Action::kDeny,
               .want_admitted = 0,
               .want_reason = reason::kNoCountMeetsPolicy,
               .want_message = "Even spec.minNodes (2) does not pass, so it cannot be downsized. "
                               "The largest count that passes is 1 node."});
  c.push_back(
      {.name = "compute_hint_is_quoted",
       .job = a_training_job("bert").nodes(4).params(25e6).step_time_hint_ms(300),
       .measurement = a_measurement().busbw_gbps(0.5).latency_us(200).compute_ms(300).build(),
       .want_action = Action::kDownsize,
       .want_admitted = 2,
       .want_reason = reason::kDownsized,
       .want_message = "compute step 300 ms"});
  c.push_back({.name = "poor_fit_is_flagged_in_the_message",
               .policy = a_policy().max_comm_share(0.40).build(),
               .measurement = a_measurement()
                                  .busbw_gbps(0.5)
                                  .latency_us(200)
                                  .poor_fit("the ring model misses")
                                  .build(),
               .want_action = Action::kAdmit,
               .want_admitted = 4,
               .want_reason = reason::kWithinPolicy,
               .want_message = "Caution: the ring model misses"});
  // The probe's DDP step at 2 nodes: 400 ms against the model's 368 ms.
  c.push_back({.name = "at_the_probed_count_the_prediction_is_the_measured_step",
               .job = a_training_job("bert").nodes(2).params(25e6),
               .measurement = with_ddp_step(
                   a_measurement().busbw_gbps(0.5).latency_us(200).compute_ms(300).build(), 2, 400),
               .want_action = Action::kAdmit,
               .want_admitted = 2,
               .want_reason = reason::kWithinPolicy,
               .want_message = "At 2 nodes the probe measured 25.0% of each 400 ms step"});
  c.push_back({.name = "a_slower_measured_step_downsizes_further_than_the_raw_model",
               .measurement = with_ddp_step(
                   a_measurement().busbw_gbps(0.5).latency_us(200).compute_ms(300).build(), 2, 450),
               .want_action = Action::kDownsize,
               .want_admitted = 1,
               .want_reason = reason::kDownsized,
               .want_message = "At 4 nodes the model predicts 45.4% of each 550 ms step in "
                               "exposed communication (scaling efficiency 54.6%, extrapolated "
                               "from 2 nodes probed)"});
  c.push_back({.name = "the_message_names_the_measured_step_and_the_overlap_it_implies",
               .measurement = with_ddp_step(
                   a_measurement().busbw_gbps(0.5).latency_us(200).compute_ms(300).build(), 2, 450),
               .want_action = Action::kDownsize,
               .want_admitted = 1,
               .want_reason = reason::kDownsized,
               .want_message = "DDP step 450 ms at 2 nodes (it hid 37.6% of what DDP's schedule "
                               "would hide behind backward, which the model uses)"});
  c.push_back({.name = "a_step_slower_than_no_overlap_names_the_bandwidth_it_implies",
               .measurement = with_ddp_step(
                   a_measurement().busbw_gbps(0.5).latency_us(200).compute_ms(300).build(), 2, 700),
               .want_action = Action::kDownsize,
               .want_admitted = 1,
               .want_reason = reason::kDownsized,
               .want_message =
                   "DDP step 700 ms at 2 nodes (effective busbw 0.25 GB/s, no communication "
                   "hidden behind backward, which the model uses)"});
  c.push_back({.name = "a_measured_step_that_passes_is_admitted_where_the_raw_model_would_not",
               .job = a_training_job("bert").nodes(3).params(25e6),
               .measurement = with_ddp_step(
                   a_measurement().busbw_gbps(0.5).latency_us(200).compute_ms(300).build(), 3, 390),
               .want_action = Action::kAdmit,
               .want_admitted = 3,
               .want_reason = reason::kWithinPolicy,
               .want_message = "At 3 nodes the probe measured 23.1%"});
  c.push_back({.name = "extrapolation_beyond_max_extrapolation_gates_until_a_larger_probe",
               .job = a_training_job("bert").nodes(9).params(25e6),
               .want_action = Action::kGate,
               .want_admitted = 9,
               .want_reason = reason::kExtrapolationTooFar,
               .want_message =
                   "spec.numNodes 9 is more than the built-in default policy's maxExtrapolation "
                   "4 x the 2 nodes probed (8); the job is suspended until a probe "
                   "of at least 3 nodes measures the link"});
  c.push_back({.name = "extrapolation_up_to_max_extrapolation_is_decided",
               .job = a_training_job("bert").nodes(8).params(25e6),
               .want_action = Action::kDownsize,
               .want_admitted = 2,
               .want_reason = reason::kDownsized,
               .want_message = "extrapolated from 2 nodes probed"});
  c.push_back({.name = "max_extrapolation_one_decides_only_the_probed_count",
               .job = a_training_job("bert").nodes(3).params(25e6),
               .policy = with_max_extrapolation(a_policy().build(), 1),
               .want_action = Action::kGate,
               .want_admitted = 3,
               .want_reason = reason::kExtrapolationTooFar,
               .want_message = "maxExtrapolation 1 x the 2 nodes probed (2)"});
  c.push_back({.name = "a_lenient_max_extrapolation_decides_far_and_says_so",
               .job = a_training_job("bert").nodes(1000).params(25e6),
               .policy = with_max_extrapolation(a_policy().max_comm_share(0.9).build(), 1000),
               .measurement = a_measurement().busbw_gbps(50).latency_us(5).compute_ms(300).build(),
               .want_action = Action::kAdmit,
               .want_admitted = 1000,
               .want_reason = reason::kWithinPolicy,
               .want_message = "Caution: 1000 nodes is 500x the 2 nodes probed"});
  // Far beyond the probe and beyond every probe the policy allows (probe.maxNodes 4 x
  // maxExtrapolation 4 = 16 nodes): gated only for the largest allowed probe, never
  // promising one that probe.maxNodes forbids (user trial, #9: "a probe of at least 2500
  // nodes" on a policy whose probes take at most 4).
  c.push_back(
      {.name = "a_zero_latency_fit_far_beyond_the_probe_is_gated_not_admitted",
       .job = a_training_job("bert").nodes(1000).params(25e6),
       .measurement = a_measurement().busbw_gbps(0.116).latency_us(0).compute_ms(2000).build(),
       .want_action = Action::kGate,
       .want_admitted = 1000,
       .want_reason = reason::kExtrapolationTooFar,
       .want_message =
           "spec.numNodes 1000 is more than any probe the built-in default policy allows can "
           "decide: maxExtrapolation 4 x probe.maxNodes 4 = 16 nodes. The job is "
           "suspended until a probe of 4 nodes measures the link; then it is "
           "downsized to the largest count from spec.minNodes (1) to 16 that "
           "passes"});
  c.push_back({.name = "beyond_every_allowed_probe_under_deny_is_denied_at_admission",
               .job = a_training_job("bert").nodes(10000).params(25e6),
               .policy = a_policy().action(EnforcementAction::kDeny).build(),
               .want_action = Action::kDeny,
               .want_admitted = 0,
               .want_reason = reason::kDenied,
               .want_message = "maxExtrapolation 4 x probe.maxNodes 4 = 16 nodes. Denied "
                               "(enforcementAction: deny): ask for at most 16 nodes"});
  c.push_back({.name = "beyond_every_allowed_probe_with_min_nodes_beyond_it_too_is_denied",
               .job = a_training_job("bert").nodes(10000).min_nodes(20).params(25e6),
               .want_action = Action::kDeny,
               .want_admitted = 0,
               .want_reason = reason::kNoCountMeetsPolicy,
               .want_message = "and spec.minNodes (20) is more than that, so it cannot be "
                               "downsized: ask for at most 16 nodes"});
  c.push_back({.name = "beyond_every_allowed_probe_after_the_largest_one_downsizes_within_reach",
               .job = a_training_job("bert").nodes(10000).params(25e6),
               .policy = a_policy().max_comm_share(0.9).build(),
               .measurement = a_measurement().busbw_gbps(5).nodes_probed(4).compute_ms(300).build(),
               .want_action = Action::kDownsize,
               .want_admitted = 16,
               .want_reason = reason::kDownsized,
               .want_message =
                   "spec.numNodes 10000 is more than any probe the built-in default policy "
                   "allows can decide: maxExtrapolation 4 x probe.maxNodes 4 = 16 "
                   "nodes; nothing beyond it can be shown to meet the policy; measured "
                   "all-reduce busbw 5 GB/s"});
  c.push_back(
      {.name = "beyond_every_allowed_probe_after_the_largest_one_downsizes_to_what_passes",
       .job = a_training_job("bert").nodes(10000).params(25e6),
       .measurement = a_measurement().busbw_gbps(0.5).latency_us(200).nodes_probed(4).build(),
       .want_action = Action::kDownsize,
       .want_admitted = 2,
       .want_reason = reason::kDownsized,
       .want_message = "Downsized from 10000 to 2 nodes"});
  c.push_back({.name = "beyond_every_allowed_probe_with_min_nodes_beyond_the_reach_is_denied",
               .job = a_training_job("bert").nodes(10000).min_nodes(20).params(25e6),
               .policy = a_policy().max_comm_share(0.9).build(),
               .measurement = a_measurement().busbw_gbps(5).nodes_probed(4).compute_ms(300).build(),
               .want_action = Action::kDeny,
               .want_admitted = 0,
               .want_reason = reason::kNoCountMeetsPolicy,
               .want_message = "Even spec.minNodes (20) is more than 16, so it cannot be "
                               "downsized. The largest count that passes is 16 nodes."});
  c.push_back({.name = "beyond_every_allowed_probe_under_warn_runs_with_what_downsize_would_do",
               .job = a_training_job("bert").nodes(10000).params(25e6),
               .policy = a_policy().max_comm_share(0.9).action(EnforcementAction::kWarn).build(),
               .measurement = a_measurement().busbw_gbps(5).nodes_probed(4).compute_ms(300).build(),
               .want_action = Action::kWarn,
               .want_admitted = 10000,
               .want_reason = reason::kWarned,
               .want_message = "Admitted anyway (enforcementAction: warn)",
               .want_would = Action::kDownsize});
  c.push_back({.name = "a_probe_larger_than_probe_max_nodes_decides_as_far_as_it_reaches",
               .job = a_training_job("bert").nodes(100).params(25e6),
               .policy = a_policy().max_comm_share(0.9).build(),
               .measurement = a_measurement().busbw_gbps(5).nodes_probed(8).compute_ms(300).build(),
               .want_action = Action::kDownsize,
               .want_admitted = 32,
               .want_reason = reason::kDownsized,
               .want_message = "maxExtrapolation 4 x the 8 nodes probed = 32 nodes"});
  c.push_back({.name = "a_larger_probe_max_nodes_gates_for_the_probe_that_decides_the_request",
               .job = a_training_job("bert").nodes(1000).params(25e6),
               .policy = with_probe_max_nodes(a_policy().build(), 250),
               .want_action = Action::kGate,
               .want_admitted = 1000,
               .want_reason = reason::kExtrapolationTooFar,
               .want_message = "until a probe of at least 250 nodes measures the link"});
  c.push_back({.name = "no_measurement_beyond_every_allowed_probe_says_so_at_admission",
               .job = a_training_job("bert").nodes(10000).params(25e6),
               .measurement = std::nullopt,
               .want_action = Action::kGate,
               .want_admitted = 10000,
               .want_reason = reason::kNoMeasurement,
               .want_message =
                   "no measurement of the link between these nodes yet. "
                   "spec.numNodes 10000 is more than any probe the built-in default policy "
                   "allows can decide: maxExtrapolation 4 x probe.maxNodes 4 = 16 "
                   "nodes. The job is suspended until a probe of 4 nodes measures "
                   "the link"});
  c.push_back({.name = "no_measurement_beyond_every_allowed_probe_under_deny_is_denied",
               .job = a_training_job("bert").nodes(10000).params(25e6),
               .policy = a_policy().action(EnforcementAction::kDeny).build(),
               .measurement = std::nullopt,
               .want_action = Action::kDeny,
               .want_admitted = 0,
               .want_reason = reason::kDenied,
               .want_message = "ask for at most 16 nodes"});
  // Staleness names the part that is stale, with its own time (user trial, #9: the
  // message named the compute step's time as "the link measurement").
  c.push_back({.name = "a_stale_compute_record_is_named_with_its_own_time",
               .measurement = with_ages(a_measurement().busbw_gbps(0.5).build(), 1h, 25h),
               .want_action = Action::kGate,
               .want_admitted = 4,
               .want_reason = reason::kStaleMeasurement,
               .want_message = "the compute measurement of this model from " +
                               format_rfc3339(test_now() - 25h) +
                               " is older than measurementTTL 24h (the link, measured at " +
                               format_rfc3339(test_now() - 1h) + ", is fresh)"});
  c.push_back({.name = "a_stale_link_is_named_with_the_link_time",
               .measurement = with_ages(a_measurement().busbw_gbps(0.5).build(), 25h, 30h),
               .want_action = Action::kGate,
               .want_admitted = 4,
               .want_reason = reason::kStaleMeasurement,
               .want_message = "the link measurement from " + format_rfc3339(test_now() - 25h) +
                               " is older than measurementTTL 24h"});
  c.push_back(
      {.name = "an_old_compute_record_within_the_ttl_is_used",
       .measurement = with_ages(a_measurement().busbw_gbps(0.5).latency_us(200).build(), 1h, 23h),
       .want_action = Action::kDownsize,
       .want_admitted = 2,
       .want_reason = reason::kDownsized,
       .want_message = "Downsized from 4 to 2 nodes"});
  return c;
}

// Test names print the case name, not a byte dump.
void PrintTo(const Case& c, std::ostream* os) {
  *os << c.name;
}

class DecisionTable : public ::testing::TestWithParam<Case> {};

TEST_P(DecisionTable, decides) {
  const Case& c = GetParam();
  TrainingJob job = c.job.build();
  DecisionInput in{&job, &c.policy, c.measurement ? &*c.measurement : nullptr, c.requester,
                   test_now()};
  Decision d = decide(in);
  EXPECT_EQ(to_string(d.action), std::string(to_string(c.want_action))) << d.message;
  EXPECT_EQ(d.admitted_nodes, c.want_admitted) << d.message;
  EXPECT_EQ(d.reason, c.want_reason) << d.message;
  EXPECT_NE(d.message.find(c.want_message), std::string::npos)
      << "want message containing: " << c.want_message << "\n got: " << d.message;
  EXPECT_EQ(d.would_action.has_value(), c.want_would.has_value());
  if (c.want_would && d.would_action) {
    EXPECT_EQ(to_string(*d.would_action), std::string(to_string(*c.want_would)));
  }
  EXPECT_EQ(d.requested_nodes, job.spec.num_nodes);
}

INSTANTIATE_TEST_SUITE_P(Decisions, DecisionTable, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& p) { return p.param.name; });

Decision decide_with_threshold(double threshold) {
  TrainingJob job = a_training_job("bert").nodes(4).params(25e6).build();
  CommPolicy policy = a_policy().max_comm_share(threshold).build();
  Measurement m = a_measurement().busbw_gbps(0.5).latency_us(200).compute_ms(300).build();
  return decide({&job, &policy, &m, {}, test_now()});
}

TEST(Decision, exactly_at_the_threshold_passes) {
  const double share_at_4 = decide_with_threshold(1.0).prediction_for(4)->comm_share;
  EXPECT_EQ(decide_with_threshold(share_at_4).action, Action::kAdmit);
  EXPECT_EQ(decide_with_threshold(share_at_4 - 1e-6).action, Action::kDownsize);
}

TEST(Decision, min_nodes_over_num_nodes_is_refused_as_invalid) {
  TrainingJob job = a_training_job("bert").nodes(4).build();
  job.spec.min_nodes = 6;  // the parser refuses this; the decision must not trust it
  CommPolicy policy = a_policy().build();
  Measurement m = a_measurement().build();
  Decision d = decide({&job, &policy, &m, {}, test_now()});
  EXPECT_EQ(d.action, Action::kDeny);
  EXPECT_EQ(d.reason, reason::kInvalidSpec);
  EXPECT_NE(d.message.find("spec.minNodes (6)"), std::string::npos);
}

// A compute step the probe could not time steadily (a busy node) is used, and the
// decision says so, whatever its verdict; a steady one adds nothing.
TEST(Decision, an_unsteady_compute_step_is_flagged_in_the_message) {
  CommPolicy policy = a_policy().build();
  Measurement m = a_measurement().build();
  for (int nodes : {2, 4}) {  // admitted at 2, over the limit at 4
    TrainingJob job = a_training_job("bert").nodes(nodes).build();
    const Decision steady = decide({&job, &policy, &m, {}, test_now()});
    EXPECT_EQ(steady.message.find("unsteady"), std::string::npos) << steady.message;
    Measurement noisy = m;
    noisy.compute_spread = ComputeSpread{300, 250, 900, 10, 3, 0, -1};
    const Decision d = decide({&job, &policy, &noisy, {}, test_now()});
    EXPECT_EQ(d.action, steady.action);
    EXPECT_NE(d.message.find("Caution: the probe's compute step was unsteady (p10 250 ms, "
                             "median 300 ms, p90 900 ms over 10 steps, still after 3 rounds)"),
              std::string::npos)
        << d.message;
  }
}

TEST(Decision, predictions_cover_every_count_up_to_the_request) {
  Decision d = decide_with_threshold(0.3);
  ASSERT_EQ(d.predictions.size(), 4u);
  EXPECT_EQ(d.largest_passing_nodes, 2);
  EXPECT_NEAR(d.prediction_for(2)->comm_share, 0.183, 0.001);
  EXPECT_NEAR(d.prediction_for(3)->comm_share, 0.307, 0.001);
  EXPECT_NEAR(d.prediction_for(4)->comm_share, 0.356, 0.001);
}

TEST(Decision, serializes_for_status) {
  auto j = decision_to_json(decide_with_threshold(0.3));
  EXPECT_EQ(j["action"], "Downsize");
  EXPECT_EQ(j["requestedNodes"], 4);
  EXPECT_EQ(j["admittedNodes"], 2);
  EXPECT_EQ(j["reason"], reason::kDownsized);
  EXPECT_EQ(j["predictions"].size(), 4u);
  EXPECT_NEAR(j["predictedCommShare"].get<double>(), 0.356, 0.001);
}

TEST(Decision, status_table_stays_small_for_huge_jobs) {
  TrainingJob job = a_training_job("huge").nodes(10000).params(25e6).build();
  CommPolicy policy = with_max_extrapolation(a_policy().max_comm_share(0.5).build(), 5000);
  Measurement m = a_measurement().busbw_gbps(50).latency_us(5).compute_ms(300).build();
  Decision d = decide({&job, &policy, &m, {}, test_now()});
  EXPECT_LE(d.predictions.size(), 35u);
  auto j = decision_to_json(d);
  EXPECT_EQ(j["predictions"].size(), d.predictions.size());
  EXPECT_LT(j.dump().size(), 64u * 1024);
  std::set<int> rows;
  for (const auto& r : j["predictions"]) rows.insert(r["nodes"].get<int>());
  for (int n : {1, 2, 8, 16, 1024, 8192, 10000, d.admitted_nodes, d.largest_passing_nodes})
    EXPECT_TRUE(rows.count(n)) << n;
}

// Issue #12: the decision used to replay every DDP bucket for every count up to the
// request (15.8 s for 10T parameters at 600 nodes; hours at the CRD's limits).
TEST(Decision, a_job_at_the_crd_limits_is_decided_without_replaying_buckets) {
  TrainingJob job = a_training_job("huge").nodes(kMaxNodes).min_nodes(2).params(1e15).build();
  CommPolicy policy = with_max_extrapolation(a_policy().build(), kMaxNodes);
  // 4e15 bytes of gradients at 50 GB/s: about 8e4 s of all-reduce at 2 nodes; the
  // probe's step (its own model: the same 1e15 parameters) a little slower still.
  Measurement m =
      with_ddp_step(a_measurement().busbw_gbps(50).latency_us(5).compute_ms(300).build(), 2, 1e8);
  const auto start = std::chrono::steady_clock::now();
  Decision d = decide({&job, &policy, &m, {}, test_now()});
  const auto took = std::chrono::steady_clock::now() - start;
  // bench/decision_bench.cpp measures it (microseconds); this bound holds on a loaded CI host.
  EXPECT_LT(took, 100ms);
  EXPECT_EQ(d.action, Action::kDeny);
  EXPECT_EQ(d.reason, reason::kNoCountMeetsPolicy);
  EXPECT_EQ(d.largest_passing_nodes, 1);
  ASSERT_TRUE(d.correction);
  EXPECT_TRUE(d.correction->exact);
  EXPECT_TRUE(d.prediction_for(2)->measured);
}

// The passing counts are found by binary search; a scan of every count must agree.
TEST(Decision, the_largest_passing_count_is_what_a_scan_of_every_count_finds) {
  for (double busbw : {0.05, 0.5, 5.0, 50.0}) {
    for (double share : {0.05, 0.2, 0.3, 0.6}) {
      for (int probed_step_ms : {0, 330, 420}) {
        TrainingJob job = a_training_job("bert").nodes(40).params(25e6).build();
        CommPolicy policy = with_max_extrapolation(a_policy().max_comm_share(share).build(), 100);
        Measurement m = a_measurement().busbw_gbps(busbw).latency_us(200).compute_ms(300).build();
        if (probed_step_ms > 0) m = with_ddp_step(m, 2, probed_step_ms);
        Decision d = decide({&job, &policy, &m, {}, test_now()});
        // Every count, one job per count (the row for the requested count is always
        // shown): the end of the prefix of counts that pass. A measured count that fails
        // ends it even where the model, floored, would pass a larger count.
        int scan = 0;
        for (int n = 1; n <= 40; ++n) {
          TrainingJob at_n = a_training_job("bert").nodes(n).params(25e6).build();
          Decision dn = decide({&at_n, &policy, &m, {}, test_now()});
          if (scan == n - 1 && (n == 1 || meets_policy(*dn.prediction_for(n), policy.spec)))
            scan = n;
        }
        EXPECT_EQ(d.largest_passing_nodes, scan)
            << "busbw " << busbw << " share " << share << " step " << probed_step_ms;
      }
    }
  }
}

TEST(Decision, the_measured_row_is_marked_and_the_raw_model_kept_for_audit) {
  TrainingJob job = a_training_job("bert").nodes(4).params(25e6).build();
  CommPolicy policy = a_policy().max_comm_share(0.9).build();
  Measurement m = with_ddp_step(
      a_measurement().busbw_gbps(0.5).latency_us(200).compute_ms(300).build(), 2, 450);
  Decision d = decide({&job, &policy, &m, {}, test_now()});
  ASSERT_EQ(d.predictions.size(), 4u);
  ASSERT_EQ(d.raw_predictions.size(), 4u);
  EXPECT_TRUE(d.prediction_for(2)->measured);
  EXPECT_NEAR(d.prediction_for(2)->step_s, 0.450, 1e-12);
  EXPECT_FALSE(d.prediction_for(4)->measured);
  // The raw model at 4 nodes is the uncorrected 35.6%; the corrected one is higher.
  EXPECT_NEAR(d.raw_predictions[3].comm_share, 0.356, 0.001);
  EXPECT_GT(d.prediction_for(4)->comm_share, d.raw_predictions[3].comm_share);
  // The corrected model reproduces the measured step at the probed count.
  ASSERT_TRUE(d.correction);
  EXPECT_TRUE(d.correction->exact);
  auto j = decision_to_json(d);
  EXPECT_EQ(j["predictions"][1]["measured"], true);
  EXPECT_EQ(j["predictions"][3]["measured"], false);
  EXPECT_EQ(j["rawPredictions"].size(), 4u);
  EXPECT_EQ(j["nodesProbed"], 2);
  EXPECT_EQ(j["correction"]["busbwFactor"].get<double>(), round_significant(d.correction->factor));
}

TEST(Decision, a_probe_run_with_other_procs_per_node_corrects_but_shows_no_measured_row) {
  TrainingJob job = a_training_job("bert").nodes(4).procs_per_node(8).params(25e6).build();
  CommPolicy policy = a_policy().max_comm_share(0.99).build();
  Measurement m = with_ddp_step(
      a_measurement().busbw_gbps(0.5).latency_us(200).compute_ms(300).build(), 2, 450);
  Decision d = decide({&job, &policy, &m, {}, test_now()});
  ASSERT_TRUE(d.correction);
  ASSERT_EQ(d.predictions.size(), 4u);
  for (const auto& p : d.predictions) EXPECT_FALSE(p.measured) << p.nodes;
}

// What the operator does with a Gate for ExtrapolationTooFar: it probes the pool at
// min(numNodes, probe.maxNodes) nodes (operator/probe_job.h, probe_node_count) and decides
// again. That decision must not ask for yet another probe: a gate promises only a probe
// the policy allows (user trial, #9: 10000 nodes gated "until a probe of at least 2500
// nodes" under probe.maxNodes 4, then failed).
TEST(Decision, a_gate_for_a_larger_probe_is_lifted_by_the_probe_the_policy_allows) {
  for (int max_nodes : {2, 4, 16, 250}) {
    for (int k : {1, 4, 10}) {
      for (int nodes : {3, 9, 17, 64, 1000, kMaxNodes}) {
        CommPolicy policy =
            with_probe_max_nodes(with_max_extrapolation(a_policy().build(), k), max_nodes);
        TrainingJob job = a_training_job("bert").nodes(nodes).params(25e6).build();
        Measurement first = a_measurement().busbw_gbps(0.5).latency_us(200).build();
        Decision d = decide({&job, &policy, &first, {}, test_now()});
        if (d.action != Action::kGate) continue;
        ASSERT_EQ(d.reason, reason::kExtrapolationTooFar) << d.message;
        const int probe = std::max(2, std::min(nodes, max_nodes));
        Measurement probed =
            a_measurement().busbw_gbps(0.5).latency_us(200).nodes_probed(probe).build();
        Decision after = decide({&job, &policy, &probed, {}, test_now()});
        EXPECT_NE(after.action, Action::kGate)
            << "maxNodes " << max_nodes << " k " << k << " nodes " << nodes << ": " << d.message
            << "\n then: " << after.message;
      }
    }
  }
}

// A DDP step calibrates the model only with the link it ran on (user trial, #9: after
// the pool's link was re-probed from 0.121 to 1.01 GB/s the decision still used the old
// step's effective busbw 0.108).
Measurement with_ddp_step_of_an_older_link(Measurement m) {
  m.ddp_step_not_used = "the probe's DDP step at 2 nodes (" + format_rfc3339(test_now() - 3h) +
                        ") ran on the link as it was then, not on the link measured at " +
                        format_rfc3339(test_now() - 1h);
  return m;
}

TEST(Decision, a_ddp_step_of_an_older_link_is_not_applied_and_the_correction_says_why) {
  TrainingJob job = a_training_job("bert").nodes(4).params(25e6).build();
  CommPolicy policy = a_policy().max_comm_share(0.9).build();
  Measurement m = with_ddp_step_of_an_older_link(
      a_measurement().busbw_gbps(0.5).latency_us(200).compute_ms(300).build());
  Decision d = decide({&job, &policy, &m, {}, test_now()});
  EXPECT_FALSE(d.correction);
  EXPECT_EQ(d.correction_not_applied, m.ddp_step_not_used);
  EXPECT_NEAR(d.prediction_for(4)->comm_share, 0.356, 0.001);  // the raw model
  for (const auto& p : d.predictions) EXPECT_FALSE(p.measured) << p.nodes;
  EXPECT_NE(d.message.find("the model is used uncorrected: the probe's DDP step at 2 nodes"),
            std::string::npos)
      << d.message;
  auto j = decision_to_json(d);
  EXPECT_EQ(j["correction"]["applied"], false);
  EXPECT_EQ(j["correction"]["note"], m.ddp_step_not_used);
  EXPECT_FALSE(j.contains("rawPredictions"));
}

// The trial of 2026-12-06: a probe of another model replaced the link; this model's DDP step
// still calibrates the model, against the link it ran on (its record kept it), and the
// factor found applies to today's link. No row is the measured step: it ran elsewhere.
TEST(Decision, a_ddp_step_on_an_earlier_link_calibrates_with_that_link) {
  TrainingJob job = a_training_job("bert").nodes(4).params(25e6).build();
  CommPolicy policy = a_policy().max_comm_share(0.9).build();
  const Measurement then = with_ddp_step(
      a_measurement().busbw_gbps(0.5).latency_us(200).compute_ms(300).build(), 2, 450);
  const Decision on_its_link = decide({&job, &policy, &then, {}, test_now()});
  ASSERT_TRUE(on_its_link.correction);
  Measurement now = then;
  now.link.busbw_bytes_per_s = 1.0e9;  // re-probed since, by another model's probe
  now.measured_ddp_link = then.link;
  const Decision d = decide({&job, &policy, &now, {}, test_now()});
  ASSERT_TRUE(d.correction);
  EXPECT_DOUBLE_EQ(d.correction->factor, on_its_link.correction->factor);
  EXPECT_DOUBLE_EQ(d.correction->overlap, on_its_link.correction->overlap);
  EXPECT_LT(d.correction->overlap, 1);
  ModelInputs corrected;
  corrected.compute = *now.compute;
  corrected.link = LinkModel::from_fit(now.link, now.nodes_probed);
  corrected.link.busbw_bytes_per_s *= d.correction->factor;
  corrected.overlap = d.correction->overlap;
  corrected.gradient_bytes = 100e6;
  EXPECT_NEAR(d.prediction_for(4)->comm_share, predict_step(corrected, 4).comm_share, 1e-9);
  for (const auto& p : d.predictions) EXPECT_FALSE(p.measured) << p.nodes;
  EXPECT_NE(
      d.message.find("on the link as probed with it (busbw 0.5 GB/s; its factor 1 and overlap "
                     "37.6% applied to today's)"),
      std::string::npos)
      << d.message;
}

// The admin trial of 2026-12-07: the Ready message named no policy ("within policy
// (20.0%)"), and a step from an earlier link read "(busbw ...; ... applied to today's)
// (effective busbw ...)". The policy is named as a refusal names it; what the model takes
// from the step sits in the link's own parenthesis.
TEST(Decision, an_admission_names_its_policy_and_an_earlier_links_step_reads_as_one) {
  TrainingJob job = a_training_job("bert").nodes(4).params(25e6).build();
  CommPolicy policy = a_policy().max_comm_share(0.99).build();
  const Measurement then = with_ddp_step(
      a_measurement().busbw_gbps(0.5).latency_us(200).compute_ms(300).build(), 2, 1500);
  Measurement now = then;
  now.link.busbw_bytes_per_s = 1.0e9;
  now.measured_ddp_link = then.link;
  const Decision d = decide({&job, &policy, &now, {}, test_now()});
  ASSERT_EQ(d.action, Action::kAdmit) << d.message;
  EXPECT_NE(d.message.find(", within the limit: "), std::string::npos) << d.message;
  EXPECT_NE(d.message.find(" allows at most 99.0% communication; measured all-reduce"),
            std::string::npos)
      << d.message;
  ASSERT_TRUE(d.correction);
  ASSERT_NE(d.correction->factor, 1);
  EXPECT_NE(d.message.find(" applied to today's: effective busbw "), std::string::npos)
      << d.message;
  EXPECT_EQ(d.message.find(") ("), std::string::npos) << d.message;
}

TEST(Decision, an_applied_correction_says_so) {
  TrainingJob job = a_training_job("bert").nodes(4).params(25e6).build();
  CommPolicy policy = a_policy().max_comm_share(0.9).build();
  Measurement m = with_ddp_step(
      a_measurement().busbw_gbps(0.5).latency_us(200).compute_ms(300).build(), 2, 450);
  auto j = decision_to_json(decide({&job, &policy, &m, {}, test_now()}));
  EXPECT_EQ(j["correction"]["applied"], true);
  EXPECT_FALSE(j["correction"].contains("note"));
}

// A probe that timed its buckets all-reduced alone: the link comes from them, and what the
// step exposed beyond them is a cost per step that the other counts pay as it is, not a
// slower link that the ring's bytes would grow (issue #22). The message, the JSON and the
// larger counts say so.
TEST(Decision, buckets_timed_alone_give_the_link_and_a_per_step_cost) {
  TrainingJob job = a_training_job("bert").nodes(4).params(25e6).build();
  CommPolicy policy = a_policy().max_comm_share(0.99).build();
  const Measurement step_only = with_ddp_step(
      a_measurement().busbw_gbps(0.5).latency_us(200).compute_ms(300).build(), 2, 650);
  Measurement timed = step_only;
  timed.measured_ddp_step->allreduce_ms = 250;  // 100 MB at 0.4 GB/s: 350 ms exposed

  const Decision d = decide({&job, &policy, &timed, {}, test_now()});
  ASSERT_TRUE(d.correction);
  EXPECT_TRUE(d.correction->from_buckets_alone);
  EXPECT_NEAR(d.correction->factor, 0.8, 1e-6);
  EXPECT_NEAR(d.correction->step_overhead_s, 0.1, 1e-6);
  EXPECT_NE(d.message.find("its buckets all-reduced alone in 250 ms: effective busbw 0.4 GB/s, "
                           "no communication hidden behind backward, and 100 ms a step beyond "
                           "the all-reduce that does not grow with nodes, which the model uses"),
            std::string::npos)
      << d.message;
  const auto j = decision_to_json(d);
  EXPECT_EQ(j["correction"]["applied"], true);
  EXPECT_NEAR(j["correction"]["stepOverheadMs"].get<double>(), 100, 1e-3);
  // At 4 nodes: 250 ms x 1.5 + 100 ms exposed on a 300 ms compute step.
  const StepPrediction* at4 = d.prediction_for(4);
  ASSERT_NE(at4, nullptr);
  EXPECT_NEAR(at4->exposed_comm_s, 0.475, 1e-3);
  // Buckets' times the calibration cannot use are said, and the step alone calibrates:
  // one no bandwidth in 0.05-4x gives, one slower than the step's exposed communication
  // where the schedule hides much of it.
  for (const double buckets_ms : {1e6, 1e-6}) {
    Measurement unusable = step_only;
    unusable.measured_ddp_step->allreduce_ms = buckets_ms;
    const Decision u = decide({&job, &policy, &unusable, {}, test_now()});
    EXPECT_FALSE(u.correction->from_buckets_alone);
    EXPECT_NE(u.message.find("are not used (no bandwidth within 0.05-4x of the swept one gives "
                             "that time): the step alone calibrates"),
              std::string::npos)
        << u.message;
    EXPECT_EQ(decision_to_json(u)["correction"]["fromBucketsAlone"], false);
    EXPECT_FALSE(decision_to_json(u)["correction"].contains("stepOverheadMs"));
  }
  EXPECT_EQ(j["correction"]["fromBucketsAlone"], true);
  // Read as a slower link, the whole 350 ms grows by the bus factor.
  const Decision old = decide({&job, &policy, &step_only, {}, test_now()});
  EXPECT_FALSE(old.correction->from_buckets_alone);
  EXPECT_FALSE(decision_to_json(old)["correction"].contains("stepOverheadMs"));
  EXPECT_FALSE(decision_to_json(old)["correction"].contains("fromBucketsAlone"));
  EXPECT_NEAR(old.prediction_for(4)->exposed_comm_s, 0.525, 1e-3);
}

// The correction's words and its `applied` agree (a trial saw `applied: true,
// reproducesMeasuredStep: false` beside a message saying the model was used as it is): a
// step faster than any bandwidth explains is not applied; one slower than the floor is
// applied at the floor, and the message says so.
TEST(Decision, a_correction_that_reproduces_nothing_says_what_the_model_uses) {
  TrainingJob job = a_training_job("bert").nodes(4).params(25e6).build();
  CommPolicy policy = a_policy().max_comm_share(0.99).build();
  const Measurement base = a_measurement().busbw_gbps(0.5).latency_us(200).compute_ms(300).build();

  const Measurement fast_m = with_ddp_step(base, 2, 300);
  Decision fast = decide({&job, &policy, &fast_m, {}, test_now()});
  ASSERT_TRUE(fast.correction);
  EXPECT_FALSE(fast.correction->exact);
  EXPECT_NE(fast.message.find("no bandwidth reproduces it; the model is used as it is"),
            std::string::npos)
      << fast.message;
  auto jf = decision_to_json(fast);
  EXPECT_EQ(jf["correction"]["applied"], false);
  EXPECT_EQ(jf["correction"]["reproducesMeasuredStep"], false);
  // Nor does it decide its own count: the model does, as it does every other count.
  const StepPrediction* at_probe = fast.prediction_for(2);
  ASSERT_NE(at_probe, nullptr);
  EXPECT_FALSE(at_probe->measured);
  EXPECT_DOUBLE_EQ(at_probe->comm_share, fast.raw_predictions[1].comm_share);

  const Measurement slow_m = with_ddp_step(base, 2, 100000);
  Decision slow = decide({&job, &policy, &slow_m, {}, test_now()});
  ASSERT_TRUE(slow.correction);
  EXPECT_EQ(slow.correction->factor, kMinBusbwCorrection);
  EXPECT_NE(slow.message.find("the model uses that floor, effective busbw 0.025 GB/s"),
            std::string::npos)
      << slow.message;
  auto js = decision_to_json(slow);
  EXPECT_EQ(js["correction"]["applied"], true);
  EXPECT_EQ(js["correction"]["reproducesMeasuredStep"], false);
}

// A DDP step slower than the model explains even at the floor fails at its count while the
// floored model passes a larger one: the larger count does not pass either (the passing
// counts stay a prefix, what downsizing and the advice rely on).
TEST(Decision, a_measured_count_that_fails_bounds_the_larger_ones) {
  TrainingJob job = a_training_job("bert").nodes(4).params(25e6).build();
  CommPolicy policy = a_policy().max_comm_share(0.95).build();
  const Measurement slow = with_ddp_step(
      a_measurement().busbw_gbps(0.5).latency_us(200).compute_ms(300).build(), 2, 100000);
  const Decision d = decide({&job, &policy, &slow, {}, test_now()});
  ASSERT_TRUE(d.correction);
  ASSERT_EQ(d.correction->factor, kMinBusbwCorrection);
  const StepPrediction* measured = d.prediction_for(2);
  ASSERT_NE(measured, nullptr);
  ASSERT_TRUE(measured->measured);
  ASSERT_GT(measured->comm_share, 0.95);
  const StepPrediction* three = d.prediction_for(3);
  ASSERT_NE(three, nullptr);
  ASSERT_LT(three->comm_share, 0.95) << "the floored model passes 3: the case this is about";
  EXPECT_EQ(d.largest_passing_nodes, 1);
  EXPECT_EQ(d.admitted_nodes, 1);
}

// A profile without its backend (written by hand, or before the field) read "(, 4 nodes
// probed)" (the attacker review of 2026-12-07).
TEST(Decision, evidence_without_a_backend_names_only_the_nodes) {
  TrainingJob job = a_training_job("bert").nodes(4).params(25e6).build();
  CommPolicy policy = a_policy().max_comm_share(0.9).build();
  Measurement m = a_measurement().busbw_gbps(0.5).latency_us(200).compute_ms(300).build();
  m.backend.clear();
  m.transport.clear();
  const Decision d = decide({&job, &policy, &m, {}, test_now()});
  EXPECT_NE(d.message.find("busbw 0.5 GB/s (2 nodes probed)"), std::string::npos) << d.message;
}

struct ShownCase {
  std::string name;
  int requested, admitted, largest_passing, probed;
  std::vector<int> want;
};

TEST(ShownNodeCounts, every_count_up_to_16_then_powers_of_two_and_the_counts_named) {
  std::vector<int> huge = {1,  2,  3,  4,  5,  6,  7,   8,   9,   10,   11,   12,   13,   14,
                           15, 16, 32, 37, 38, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 10000};
  const std::vector<ShownCase> cases = {
      {"small_request_shows_every_count", 4, 2, 2, 2, {1, 2, 3, 4}},
      {"probed_count_above_the_request_is_not_shown", 3, 3, 3, 8, {1, 2, 3}},
      {"huge_request_adds_admitted_and_the_first_failing", 10000, 37, 37, 2, huge},
      {"gated_request_without_admitted",
       20,
       0,
       18,
       4,
       {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 18, 19, 20}},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(shown_node_counts(c.requested, c.admitted, c.largest_passing, c.probed), c.want)
        << c.name;
  }
  EXPECT_LE(shown_node_counts(kMaxNodes, 4097, 4097, 3).size(), 35u);
}

TEST(PolicySelection, policy_ref_tightens_then_strictest_matching_then_default) {
  std::vector<CommPolicy> policies = {
      a_policy().named("lenient").max_comm_share(0.5).build(),
      a_policy().named("strict").max_comm_share(0.1).namespace_selector("tier", "prod").build(),
      a_policy().named("team").max_comm_share(0.2).namespace_selector("team", "nlp").build()};
  std::string err;
  auto job = a_training_job().build();
  EXPECT_EQ(select_policy(job, {{"team", "nlp"}}, policies, &err)->metadata.name, "team");
  EXPECT_EQ(select_policy(job, {{"tier", "prod"}, {"team", "nlp"}}, policies, &err)->metadata.name,
            "strict");
  // A policy for every namespace replaces the built-in default; the built-in default
  // governs only where no policy applies (issue #19; the whole rule:
  // tests/core/policy_selection_test.cpp).
  EXPECT_EQ(select_policy(job, {}, policies, &err)->metadata.name, "lenient");
  EXPECT_EQ(select_policy(job, {}, {}, &err)->metadata.name, kBuiltinPolicyName);
  // A policyRef may only tighten (issue #19 item 1): naming the lenient policy where the
  // strict one applies is decided by the strict one.
  auto ref = a_training_job().policy_ref("lenient").build();
  EXPECT_EQ(select_policy(ref, {{"tier", "prod"}}, policies, &err)->metadata.name, "strict");
  auto tighter = a_training_job().policy_ref("team").build();
  EXPECT_EQ(select_policy(tighter, {{"team", "nlp"}}, policies, &err)->metadata.name, "team");
  auto escape = a_training_job().policy_ref("strict").build();
  EXPECT_FALSE(select_policy(escape, {{"team", "nlp"}}, policies, &err));
  EXPECT_NE(err.find("does not apply to namespace \"research\""), std::string::npos) << err;
  auto missing = a_training_job().policy_ref("nope").build();
  EXPECT_FALSE(select_policy(missing, {}, policies, &err));
  EXPECT_NE(err.find("spec.policyRef.name: CommPolicy \"nope\" not found"), std::string::npos);
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate
