#include "core/job_decision.h"

#include <algorithm>
#include <cctype>

#include "core/annotations.h"
#include "core/measurement.h"
#include "core/policy_selection.h"
#include "core/quantity.h"
#include "core/text_cut.h"

namespace commgate {
namespace {

std::map<std::string, std::string> commgate_annotations(const TrainingJob& job) {
  std::map<std::string, std::string> out;
  for (const auto& [k, v] : job.metadata.annotations) {
    if (k.rfind(annotation::kPrefix, 0) == 0) out.emplace(k, v);
  }
  return out;
}

// The prediction rows of two decisions of one job, by node count (the first's row where
// both have one).
std::vector<StepPrediction> merged_rows(const std::vector<StepPrediction>& a,
                                        const std::vector<StepPrediction>& b) {
  std::vector<StepPrediction> out = a;
  for (const StepPrediction& row : b)
    if (std::none_of(out.begin(), out.end(),
                     [&](const StepPrediction& r) { return r.nodes == row.nodes; }))
      out.push_back(row);
  std::sort(out.begin(), out.end(),
            [](const StepPrediction& x, const StepPrediction& y) { return x.nodes < y.nodes; });
  return out;
}

// Under enforcementAction downsize, a job the policy admits (or downsizes) that its pool
// cannot hold, whose spec.minNodes the pool can, is decided again as if it had asked for
// the pool's usable nodes: the researcher accepted any count down to minNodes, and a
// fixed pool never grows (the trial of 2026-12-05: `numNodes: 3, minNodes: 1` on two
// nodes waited, though two passed the policy). nullopt when that decision admits nothing.
std::optional<Decision> fit_to_pool(const Decision& d, const TrainingJob& job, DecisionInput in,
                                    int usable, const std::string& pool_text) {
  const CommPolicySpec& spec = in.policy->spec;
  if (spec.enforcement_action != EnforcementAction::kDownsize) return std::nullopt;
  // A gate for a larger probe the pool cannot hold is a request the pool binds, as a
  // decided one is (check_pool).
  const bool waits_for_a_larger_probe =
      d.action == Action::kGate && d.reason == reason::kExtrapolationTooFar;
  if (d.action != Action::kAdmit && d.action != Action::kDownsize && !waits_for_a_larger_probe)
    return std::nullopt;
  if (usable < 1 || usable < job.spec.min_nodes) return std::nullopt;
  TrainingJob fitted = job;
  fitted.spec.num_nodes = usable;
  in.job = &fitted;
  Decision at_pool = decide(in);
  if (at_pool.action != Action::kAdmit && at_pool.action != Action::kDownsize) return std::nullopt;
  at_pool.requested_nodes = job.spec.num_nodes;
  at_pool.action = Action::kDownsize;
  at_pool.reason = reason::kPoolTooSmall;
  // The rows of both decisions: the requested count's prediction stays what the
  // COMMSHARE column shows (the share the job would have had, had the pool held it).
  at_pool.predictions = merged_rows(d.predictions, at_pool.predictions);
  at_pool.raw_predictions = merged_rows(d.raw_predictions, at_pool.raw_predictions);
  std::string why_at_pool = at_pool.message;
  if (!why_at_pool.empty()) why_at_pool[0] = static_cast<char>(std::toupper(why_at_pool[0]));
  at_pool.message = pool_text + ", fewer than the " + format_nodes(job.spec.num_nodes) +
                    " asked for; " + job.spec.min_nodes_field + " (" +
                    std::to_string(job.spec.min_nodes) + ") allows fewer and " +
                    policy_label(d.policy_name) + " downsizes, so it runs on " +
                    format_nodes(at_pool.admitted_nodes) + ". " + why_at_pool;
  return at_pool;
}

// What the node count a job is held to stands for, in check_pool's message.
std::string what_the_count_is(const Decision& d, const TrainingJob& job, int runs) {
  if (d.action == Action::kGate)
    return runs > job.spec.min_nodes
               ? " a measurement of its link needs"
               : " this job needs at the least (" + job.spec.min_nodes_field + ")";
  return " this job would run (" + policy_label(d.policy_name) + " would " +
         (d.action == Action::kDownsize ? "downsize it to " : "admit ") + format_nodes(runs) + ")";
}

// What the researcher can change to run now, in check_pool's message.
std::string what_to_change(const Decision& d, const TrainingJob& job, const PoolCount& count,
                           int runs, const CommPolicySpec& spec,
                           const std::vector<PoolNode>& nodes) {
  const bool decided = d.action != Action::kGate;
  if (count.usable > 1 || (count.usable == 1 && runs > 1 && decided)) {
    std::string hint = "; ask for at most " + format_nodes(count.usable) + " to run now";
    if (decided && spec.enforcement_action == EnforcementAction::kDownsize &&
        job.spec.min_nodes > count.usable)
      hint += " (" + job.spec.min_nodes_field + " " + std::to_string(job.spec.min_nodes) +
              " keeps it from being downsized to them)";
    return hint;
  }
  const TrainingJobSpec& f = job.spec;
  if (count.too_small > 0)
    return "; ask for fewer GPUs a node (" + f.procs_per_node_field + "), or check " +
           f.node_selector_field;
  if (count.selected > 0 && count.usable == 0)
    return "; check " + f.tolerations_field + " against the nodes' taints, or " +
           f.node_selector_field;
  if (count.selected == 0) {
    const std::string miss = selector_miss(nodes, job.spec.node_selector);
    return "; check " + f.node_selector_field + " against the cluster's nodes' labels" +
           (miss.empty() ? "" : ": " + miss);
  }
  return "";
}

// A refusal names the largest count that passes, for the researcher to resubmit at: no
// more than the pool's usable nodes, or the resubmitted job waits for nodes the pool does
// not have (the trial of 2026-12-07: "5 nodes" named on a pool of 4, and the job resubmitted
// at 5 held its quota waiting).
void cap_largest_passing_to_pool(Decision& d, const TrainingJob& job, const PoolCount& count,
                                 const PoolDemand& demand) {
  if (count.usable < 1 || count.usable >= d.largest_passing_nodes) return;
  const std::string named = largest_passing_sentence(d.largest_passing_nodes);
  const std::string capped = " The largest count that passes and that the pool can hold is " +
                             format_nodes(count.usable) + " (the pool of " +
                             format_pool(job.spec.node_selector, job.spec.hostnames) + " has " +
                             describe_pool_count(count, demand) + ").";
  d.largest_passing_nodes = count.usable;
  if (const size_t at = d.message.find(named); at != std::string::npos)
    d.message.replace(at, named.size(), capped);
  else
    d.message += capped;
}

// The pool check (decide_for_job's comment): changes `out.decision` when the pool cannot
// hold the job.
void check_pool(JobDecision& out, const TrainingJob& job, const Snapshot& snapshot,
                const DecisionInput& in) {
  if (!snapshot.nodes || !out.policy) return;
  const CommPolicySpec& spec = out.policy->spec;
  if (spec.on_insufficient_nodes == InsufficientNodesAction::kIgnore) return;
  Decision& d = out.decision;
  if (d.reason == reason::kExempt) return;
  const PoolDemand demand = pool_demand_of(job, *snapshot.nodes);
  const PoolCount count = count_pool(*snapshot.nodes, demand);
  out.pool = count;
  int runs = 0;  // the fewest nodes the job would run
  switch (d.action) {
    case Action::kAdmit:
    case Action::kDownsize:
    case Action::kWarn:
      runs = d.admitted_nodes;
      break;
    case Action::kGate:
      // Waiting for a measurement: it can run no smaller than minNodes, and a probe of the
      // link between nodes needs two (a pool of one node can never decide a multi-node job).
      runs = std::min(job.spec.num_nodes, std::max(job.spec.min_nodes, 2));
      // Waiting for a probe larger than the one measured (ExtrapolationTooFar): a pool whose
      // usable nodes were all probed can never give one, so the pool binds the request as
      // it binds a decided one (the trial of 2026-12-06: 10 nodes on a pool of 2 probed on
      // 2 were gated "until a probe of at least 3 nodes", then failed by the operator).
      if (d.reason == reason::kExtrapolationTooFar) runs = std::max(runs, d.nodes_probed + 1);
      break;
    case Action::kDeny:
      cap_largest_passing_to_pool(d, job, count, demand);
      return;
  }
  if (count.usable >= runs) return;
  const std::string pool_text = "the pool of " +
                                format_pool(job.spec.node_selector, job.spec.hostnames) + " has " +
                                describe_pool_count(count, demand);
  if (auto fitted = fit_to_pool(d, job, in, count.usable, pool_text)) {
    d = std::move(*fitted);
    return;
  }
  const bool deny = spec.on_insufficient_nodes == InsufficientNodesAction::kDeny;
  std::string message = pool_text + ", fewer than the " + format_nodes(runs) +
                        what_the_count_is(d, job, runs) +
                        (deny ? ", so it is refused (onInsufficientNodes: deny)"
                              : ", so it is suspended until the pool has them "
                                "(onInsufficientNodes: gate)") +
                        what_to_change(d, job, count, runs, spec, *snapshot.nodes);
  d.action = deny ? Action::kDeny : Action::kGate;
  d.reason = reason::kPoolTooSmall;
  d.message = std::move(message);
  if (deny) d.admitted_nodes = 0;
  d.would_action.reset();
  d.would_admit_nodes.reset();
}

}  // namespace

PoolDemand pool_demand_of(const TrainingJob& job, const std::vector<PoolNode>& nodes) {
  PoolDemand demand;
  demand.node_selector = job.spec.node_selector;
  demand.hostnames = job.spec.hostnames;
  demand.tolerations = job.spec.tolerations;
  demand.accelerators_per_pod = job.spec.template_accelerators;
  if (demand.accelerators_per_pod.empty() && pool_has_gpus(nodes, job.spec.node_selector))
    demand.accelerators_per_pod[kNvidiaGpu] = job.spec.num_proc_per_node;
  return demand;
}

std::string format_node_selector(const std::map<std::string, std::string>& selector) {
  if (selector.empty()) return "{} (every node)";
  std::string s = "{";
  for (const auto& [k, v] : selector) {
    if (s.size() > 1) s += ",";
    s += k + "=" + v;
  }
  return s + "}";
}

std::string format_pool(const std::map<std::string, std::string>& node_selector,
                        const std::vector<std::string>& hostnames) {
  const std::string selector = "nodeSelector " + format_node_selector(node_selector);
  // A message names a few hosts, not a rack.
  return hostnames.empty() ? selector : selector + " on nodes " + listed(hostnames);
}

JobDecision decide_for_job(const TrainingJob& job, const Snapshot& snapshot,
                           const Requester& requester, TimePoint now) {
  JobDecision out;
  const std::string& ns = job.metadata.namespace_;
  if (snapshot.namespaces_listed && !snapshot.namespace_labels.count(ns)) {
    // No policy is known to govern; the record names the built-in default, and the
    // decision says why it stands for none.
    out.policy = default_comm_policy();
    out.profile_name = pool_name(job.spec.node_selector, job.spec.hostnames);
    Decision& d = out.decision;
    d.action = Action::kGate;
    d.reason = reason::kNamespaceUnknown;
    d.requested_nodes = d.admitted_nodes = job.spec.num_nodes;
    d.policy_name = out.policy->metadata.name;
    d.message = "namespace " + ns +
                " is not in commgate's cache of Namespaces yet, so which CommPolicy governs it "
                "is not known; the job is suspended until commgate sees the namespace and "
                "decides it";
    return out;
  }
  out.policy = select_policy(job, snapshot, &out.policy_error, &out.policy_invalid);
  if (!out.policy) return out;
  out.profile_name = pool_name(job.spec.node_selector, job.spec.hostnames);
  if (const CommProfile* profile = snapshot.profile(out.profile_name)) {
    out.profile = ObjectRef{profile->metadata.name, profile->metadata.resource_version};
    out.measurement = measurement_from_profile(*profile, job.spec.model);
  }
  DecisionInput in;
  in.job = &job;
  in.policy = &*out.policy;
  in.measurement = out.measurement ? &*out.measurement : nullptr;
  in.requester = requester;
  in.now = now;
  out.decision = decide(in);
  if (out.decision.action == Action::kGate) {
    out.decision.message += " (commgate looked for CommProfile " + out.profile_name +
                            (out.profile ? "" : ", which does not exist") + ", the pool of " +
                            format_pool(job.spec.node_selector, job.spec.hostnames) + ")";
  }
  check_pool(out, job, snapshot, in);
  return out;
}

DecisionRecord record_of(const JobDecision& jd, const TrainingJob& job, TimePoint now) {
  const Decision& d = jd.decision;
  DecisionRecord r;
  r.action = d.action;
  r.admitted_nodes = d.admitted_nodes;
  r.requested_nodes = d.requested_nodes;
  r.reason = d.reason;
  if (jd.policy) r.policy = {jd.policy->metadata.name, jd.policy->metadata.resource_version};
  r.profile = jd.profile;
  r.decided_at = now;
  // The spec as stored: a downsize lowers numNodes (no copy of the spec: its pod
  // template made the copy a quarter of /mutate's handler time, #9).
  r.spec_hash = decision_spec_hash(
      job.spec, d.action == Action::kDownsize ? d.admitted_nodes : job.spec.num_nodes);
  if (d.action == Action::kGate || d.action == Action::kDeny) r.message = d.message;
  return r;
}

bool needs_new_decision(const TrainingJob& old_job, const TrainingJob& new_job) {
  const bool unsuspended = old_job.spec.suspend && !new_job.spec.suspend;
  return unsuspended || decision_spec_hash(old_job.spec) != decision_spec_hash(new_job.spec);
}

bool commgate_annotations_changed(const TrainingJob& old_job, const TrainingJob& new_job) {
  return commgate_annotations(old_job) != commgate_annotations(new_job);
}

}  // namespace commgate
