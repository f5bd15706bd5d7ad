#include "core/policy_selection.h"

#include <algorithm>
#include <cstdio>

#include "core/quantity.h"

namespace commgate {

bool policy_ref_names(const std::string& policy_ref, const CommPolicy& policy) {
  return policy_ref == policy.metadata.name ||
         (policy_ref == kDefaultPolicyName && policy.metadata.name == kBuiltinPolicyName);
}

namespace {

// How strict each setting is, higher stricter: the order strictest-wins and the policyRef
// rule compare settings in. deny refuses; downsize cuts the job; warn and dryrun admit it.
int strictness(EnforcementAction a) {
  switch (a) {
    case EnforcementAction::kDeny:
      return 3;
    case EnforcementAction::kDownsize:
      return 2;
    case EnforcementAction::kWarn:
      return 1;
    case EnforcementAction::kDryRun:
      return 0;
  }
  return 0;
}
// deny refuses; gate holds the job until measured; admit lets it run unmeasured.
int strictness(MissingMeasurementAction a) {
  switch (a) {
    case MissingMeasurementAction::kDeny:
      return 2;
    case MissingMeasurementAction::kGate:
      return 1;
    case MissingMeasurementAction::kAdmit:
      return 0;
  }
  return 0;
}
// deny refuses; gate holds the job until the pool has the nodes; ignore does not check.
int strictness(InsufficientNodesAction a) {
  switch (a) {
    case InsufficientNodesAction::kDeny:
      return 2;
    case InsufficientNodesAction::kGate:
      return 1;
    case InsufficientNodesAction::kIgnore:
      return 0;
  }
  return 0;
}

// Rejected refuses a queued job that names no model; Ready lets Kueue admit it unmeasured.
int strictness(WithoutModelAction a) {
  return a == WithoutModelAction::kRejected ? 1 : 0;
}

bool subset(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  return std::all_of(a.begin(), a.end(), [&](const std::string& x) {
    return std::find(b.begin(), b.end(), x) != b.end();
  });
}

size_t exemption_count(const CommPolicySpec& p) {
  return p.exemptions.users.size() + p.exemptions.groups.size() +
         p.exemptions.service_accounts.size();
}

bool enforces(EnforcementAction a) {
  return a == EnforcementAction::kDeny || a == EnforcementAction::kDownsize;
}

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// Which of two policies wins where both apply: -1 when `a` does, 1 when `b` does, 0 when
// they are equal in everything that decides (then the name does). With `why`, also the
// field that decided, in words for the winner ("a lower maxCommShare (0.3 against 0.5)"),
// formatted only when asked for: selection runs on every admission.
int compare_strictness(const CommPolicySpec& a, const CommPolicySpec& b, std::string* why) {
  auto order = [](auto x, auto y) { return x < y ? -1 : (y < x ? 1 : 0); };
  // The winner (pick(c, a, b)) or the loser (pick(c, b, a)) of comparison `c`.
  auto pick = [](int c, const CommPolicySpec& x, const CommPolicySpec& y) -> const CommPolicySpec& {
    return c < 0 ? x : y;
  };
  // An enforcing policy (deny, downsize) before one that only reports (warn, dryrun):
  // otherwise a dryrun policy with a lower limit, added to observe, would stop the
  // enforcement of every namespace it selects (issue #19, trial of the policy model).
  if (int c = order(enforces(b.enforcement_action), enforces(a.enforcement_action))) {
    if (why)
      *why = "an enforcing action (" + std::string(to_string(pick(c, a, b).enforcement_action)) +
             " against " + to_string(pick(c, b, a).enforcement_action) + ", which only reports)";
    return c;
  }
  if (int c = order(a.max_comm_share, b.max_comm_share)) {
    if (why)
      *why = "a lower maxCommShare (" + number(pick(c, a, b).max_comm_share) + " against " +
             number(pick(c, b, a).max_comm_share) + ")";
    return c;
  }
  if (int c = order(b.min_scaling_efficiency.value_or(0), a.min_scaling_efficiency.value_or(0))) {
    if (why)
      *why = "a higher minScalingEfficiency (" +
             number(pick(c, a, b).min_scaling_efficiency.value_or(0)) + " against " +
             number(pick(c, b, a).min_scaling_efficiency.value_or(0)) + ")";
    return c;
  }
  // The stricter of one enum setting, `field` naming it in `why`.
  auto stricter_setting = [&](const char* field, auto setting) {
    const auto of_a = setting(a), of_b = setting(b);
    const int c = order(strictness(of_b), strictness(of_a));
    if (c != 0 && why)
      *why = std::string("a stricter ") + field + " (" + to_string(c < 0 ? of_a : of_b) +
             " against " + to_string(c < 0 ? of_b : of_a) + ")";
    return c;
  };
  if (int c = stricter_setting("enforcementAction",
                               [](const CommPolicySpec& p) { return p.enforcement_action; }))
    return c;
  if (int c = stricter_setting("onMissingMeasurement",
                               [](const CommPolicySpec& p) { return p.on_missing_measurement; }))
    return c;
  if (int c = stricter_setting("onInsufficientNodes",
                               [](const CommPolicySpec& p) { return p.on_insufficient_nodes; }))
    return c;
  if (int c = stricter_setting("admissionCheck.withoutModel", [](const CommPolicySpec& p) {
        return p.admission_check.without_model;
      }))
    return c;
  if (int c = order(a.max_extrapolation, b.max_extrapolation)) {
    if (why)
      *why = "a lower maxExtrapolation (" + std::to_string(pick(c, a, b).max_extrapolation) +
             " against " + std::to_string(pick(c, b, a).max_extrapolation) + ")";
    return c;
  }
  if (int c = order(a.measurement_ttl, b.measurement_ttl)) {
    if (why)
      *why = "a shorter measurementTTL (" + format_duration(pick(c, a, b).measurement_ttl) +
             " against " + format_duration(pick(c, b, a).measurement_ttl) + ")";
    return c;
  }
  if (int c = order(exemption_count(a), exemption_count(b))) {
    if (why)
      *why = "fewer exemptions (" + std::to_string(exemption_count(pick(c, a, b))) + " against " +
             std::to_string(exemption_count(pick(c, b, a))) + ")";
    return c;
  }
  if (why) *why = "its name, all else being equal";
  return 0;
}

// True when every label set that meets `narrow`'s requirements meets `r` too (a sufficient
// test: it never claims too much).
bool implied(const LabelRequirement& r, const LabelSelector& narrow) {
  auto contains = [](const std::vector<std::string>& v, const std::string& x) {
    return std::find(v.begin(), v.end(), x) != v.end();
  };
  if (auto it = narrow.match_labels.find(r.key); it != narrow.match_labels.end()) {
    if (r.op == "Exists") return true;
    if (r.op == "In" && contains(r.values, it->second)) return true;
    if (r.op == "NotIn" && !contains(r.values, it->second)) return true;
  }
  return std::any_of(narrow.match_expressions.begin(), narrow.match_expressions.end(),
                     [&](const LabelRequirement& n) {
                       if (n.key != r.key) return false;
                       if (n.op == "In" && r.op == "Exists") return true;
                       if (n.op == "In" && r.op == "In")  // narrow's values within wide's
                         return std::all_of(n.values.begin(), n.values.end(),
                                            [&](const auto& v) { return contains(r.values, v); });
                       if (n.op == r.op && (n.op == "Exists" || n.op == "DoesNotExist"))
                         return true;
                       if (n.op == "NotIn" && r.op == "NotIn")  // wide's values within narrow's
                         return std::all_of(r.values.begin(), r.values.end(),
                                            [&](const auto& v) { return contains(n.values, v); });
                       return false;
                     });
}

// `wide` matches every label set `narrow` matches: each of its requirements is implied by
// `narrow`'s.
bool selects_all_of(const LabelSelector& wide, const LabelSelector& narrow) {
  for (const auto& [key, value] : wide.match_labels)
    if (!implied(LabelRequirement{key, "In", {value}}, narrow)) return false;
  for (const auto& w : wide.match_expressions)
    if (!implied(w, narrow)) return false;
  return true;
}

}  // namespace

bool governs_over(const CommPolicy& a, const CommPolicy& b) {
  if (int c = compare_strictness(a.spec, b.spec, nullptr)) return c < 0;
  return a.metadata.name < b.metadata.name;
}

std::string why_governs_over(const CommPolicy& winner, const CommPolicy& loser) {
  std::string why;
  compare_strictness(winner.spec, loser.spec, &why);
  return why;
}

bool at_least_as_strict(const CommPolicy& a, const CommPolicy& b) {
  const CommPolicySpec& x = a.spec;
  const CommPolicySpec& y = b.spec;
  return x.max_comm_share <= y.max_comm_share &&
         x.min_scaling_efficiency.value_or(0) >= y.min_scaling_efficiency.value_or(0) &&
         strictness(x.enforcement_action) >= strictness(y.enforcement_action) &&
         strictness(x.on_missing_measurement) >= strictness(y.on_missing_measurement) &&
         strictness(x.on_insufficient_nodes) >= strictness(y.on_insufficient_nodes) &&
         strictness(x.admission_check.without_model) >=
             strictness(y.admission_check.without_model) &&
         x.measurement_ttl <= y.measurement_ttl && x.max_extrapolation <= y.max_extrapolation &&
         subset(x.exemptions.users, y.exemptions.users) &&
         subset(x.exemptions.groups, y.exemptions.groups) &&
         subset(x.exemptions.service_accounts, y.exemptions.service_accounts);
}

CommPolicy governing_policy(const std::map<std::string, std::string>& namespace_labels,
                            const std::vector<CommPolicy>& policies) {
  const CommPolicy* best = nullptr;
  for (const auto& p : policies) {
    if (!p.spec.namespace_selector.matches(namespace_labels)) continue;
    if (!best || governs_over(p, *best)) best = &p;
  }
  // The built-in default only where no admin's policy applies: an admin who selects a
  // namespace decides its limit, looser or stricter than the built-in one.
  return best ? *best : default_comm_policy();
}

std::optional<CommPolicy> unmanaged_workload_policy(
    const std::map<std::string, std::string>& namespace_labels,
    const std::vector<CommPolicy>& policies) {
  const CommPolicy* best = nullptr;
  for (const auto& p : policies) {
    if (p.spec.unmanaged_workloads == UnmanagedWorkloads::kAllow) continue;
    if (!p.spec.namespace_selector.matches(namespace_labels)) continue;
    const bool stricter = !best || p.spec.unmanaged_workloads > best->spec.unmanaged_workloads;
    const bool as_strict = best && p.spec.unmanaged_workloads == best->spec.unmanaged_workloads;
    if (stricter || (as_strict && governs_over(p, *best))) best = &p;
  }
  if (!best) return std::nullopt;
  return *best;
}

std::map<std::string, PolicyGovernance> governance_of(
    const std::vector<CommPolicy>& policies,
    const std::map<std::string, std::map<std::string, std::string>>& namespaces) {
  std::map<std::string, PolicyGovernance> out;
  for (const auto& p : policies) out[p.metadata.name];
  for (const auto& [ns, labels] : namespaces) {
    const std::string winner = governing_policy(labels, policies).metadata.name;
    for (const auto& p : policies) {
      if (!p.spec.namespace_selector.matches(labels)) continue;
      if (p.metadata.name == winner)
        out[p.metadata.name].governed.push_back(ns);
      else
        out[p.metadata.name].shadowed_in.emplace_back(ns, winner);
    }
  }
  return out;
}

std::optional<std::string> never_governs_because(const CommPolicy& policy,
                                                 const std::vector<CommPolicy>& others) {
  const CommPolicy* shadow = nullptr;
  for (const auto& o : others) {
    if (o.metadata.name == policy.metadata.name) continue;
    if (!selects_all_of(o.spec.namespace_selector, policy.spec.namespace_selector)) continue;
    if (!governs_over(o, policy)) continue;
    if (!shadow || governs_over(o, *shadow)) shadow = &o;
  }
  if (!shadow) return std::nullopt;
  return shadow->metadata.name;
}

std::optional<CommPolicy> select_policy(const TrainingJob& job,
                                        const std::map<std::string, std::string>& namespace_labels,
                                        const std::vector<CommPolicy>& policies,
                                        std::string* error) {
  CommPolicy governing = governing_policy(namespace_labels, policies);
  if (job.spec.policy_ref.empty()) return governing;
  std::optional<CommPolicy> named;
  for (const auto& p : policies) {
    if (p.metadata.name != job.spec.policy_ref) continue;
    // A reference may only name a policy that applies to the namespace.
    if (!p.spec.namespace_selector.matches(namespace_labels)) {
      if (error) {
        *error = "spec.policyRef.name: CommPolicy \"" + p.metadata.name +
                 "\" does not apply to namespace \"" + job.metadata.namespace_ +
                 "\" (its namespaceSelector does not match)";
      }
      return std::nullopt;
    }
    named = p;
  }
  if (!named && job.spec.policy_ref == kDefaultPolicyName) named = default_comm_policy();
  if (!named) {
    if (error) *error = "spec.policyRef.name: CommPolicy \"" + job.spec.policy_ref + "\" not found";
    return std::nullopt;
  }
  // ... and may only tighten: otherwise a job could name the loosest policy admins wrote
  // (or the built-in default) and escape a stricter one that applies to its namespace.
  if (at_least_as_strict(*named, governing)) return named;
  return governing;
}

std::optional<CommPolicy> select_policy(const TrainingJob& job, const Snapshot& snapshot,
                                        std::string* error, bool* invalid) {
  if (invalid) *invalid = false;
  auto policy =
      select_policy(job, snapshot.labels_of(job.metadata.namespace_), snapshot.policies, error);
  if (policy || job.spec.policy_ref.empty()) return policy;
  const auto bad = snapshot.invalid_policies.find(job.spec.policy_ref);
  if (bad == snapshot.invalid_policies.end()) return policy;
  if (invalid) *invalid = true;
  if (error) {
    *error = "spec.policyRef.name: CommPolicy \"" + bad->first +
             "\" exists but is invalid, so it cannot decide this job (an admin must fix it): " +
             bad->second;
  }
  return std::nullopt;
}

}  // namespace commgate
