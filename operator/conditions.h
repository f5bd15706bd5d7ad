// Status conditions in Kubernetes conventions (metav1.Condition, as apimachinery's
// meta.SetStatusCondition writes them): one entry per `type` in status.conditions, with
// status "True" | "False" | "Unknown", a CamelCase reason, a message, the
// observedGeneration it was set from, and a lastTransitionTime that changes only when the
// status does (a new reason or message under the same status keeps the time, so
// `kubectl describe` shows how long a job has waited, not when it was last looked at).
// Pure. Two forms: `Conditions`, the typed list of a status the operator owns whole (a
// TrainingJob's, operator/trainingjob_status.h), and functions on the JSON array of a
// status other writers share (a CommProfile's, a CommPolicy's, a Kueue Workload's), which
// keep what they do not know of an entry.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/time_format.h"

namespace commgate::op {

// The condition types a TrainingJob's status carries (docs/operator.md "Status").
namespace condition {
// The spec parses (False, reason InvalidSpec, when it does not: nothing runs).
inline constexpr const char* kSpecValid = "SpecValid";
// The pool's probe: False while it runs or after it failed (reason from the probe's
// outcome), True once a measurement was recorded.
inline constexpr const char* kProbed = "Probed";
// The decision: True for Admit, Downsize and Warn (reason: the decision's); False while
// gated and when denied or when the probe failed for good.
inline constexpr const char* kAdmitted = "Admitted";
// The training workload: True while its pods run.
inline constexpr const char* kRunning = "Running";
// Terminal: the workload completed (Complete) or the job failed (Failed: the workload
// failed, or the probe failed past the policy's retries).
inline constexpr const char* kComplete = "Complete";
inline constexpr const char* kFailed = "Failed";
// A spec change the running workload cannot follow (False, reason SpecChangeNotApplied):
// the decision-relevant spec changed after the training Job was created (no webhook, or
// one with failurePolicy Ignore, let it through); the Job keeps its admitted size. Absent
// otherwise.
inline constexpr const char* kSpecApplied = "SpecApplied";
}  // namespace condition

inline constexpr const char* kTrue = "True";
inline constexpr const char* kFalse = "False";
inline constexpr const char* kUnknown = "Unknown";

struct Condition {
  std::string type;
  std::string status;  // kTrue, kFalse or kUnknown
  std::string reason;  // CamelCase
  std::string message;
  int64_t observed_generation = 0;
};

// One entry as stored in status.conditions (metav1.Condition).
struct StoredCondition {
  std::string type;
  std::string status;
  std::string reason;
  std::string message;
  int64_t observed_generation = 0;
  std::string last_transition_time;  // RFC 3339

  bool operator==(const StoredCondition&) const = default;
};

// `wanted` as stored, given the entry of its type now (nullptr: none): the transition
// time is `now` unless the status stays the same.
StoredCondition next_condition(const StoredCondition* existing, const Condition& wanted,
                               TimePoint now);

// `c` as status.conditions stores it (metav1.Condition's fields).
nlohmann::json stored_condition_json(const StoredCondition& c);

// A status's conditions, one entry per type, in the order they were first set.
class Conditions {
 public:
  // From status.conditions as stored (null or absent: none). Lenient, as the reconciler
  // must read what an older operator or a person wrote: entries that are not objects or
  // have no type are dropped, a field of the wrong type reads as empty.
  static Conditions from_json(const nlohmann::json& conditions);
  nlohmann::json to_json() const;

  // Sets `wanted` (metav1's SetStatusCondition): true when anything changed.
  bool set(const Condition& wanted, TimePoint now);
  // Removes the entry of `type`; true when there was one.
  bool remove(const std::string& type);
  // The entry of `type`, or nullptr (valid until the next set or remove).
  const StoredCondition* find(const std::string& type) const;
  // True when an entry of `type` exists with that status.
  bool is(const std::string& type, const std::string& status) const;
  bool empty() const { return entries_.empty(); }
  // Entries set from generation `from` now stand for `to`: a write of this controller's
  // own moved the generation without changing what they describe.
  void carry_generation(int64_t from, int64_t to);

  bool operator==(const Conditions&) const = default;

 private:
  std::vector<StoredCondition> entries_;
};

// Sets `wanted` in `conditions` (a JSON array; null is taken as empty). An existing entry
// of the same type keeps its lastTransitionTime unless its status changes; a new entry, or
// one whose status changes, gets `now`. Returns true when anything was changed.
bool set_condition(nlohmann::json& conditions, const Condition& wanted, TimePoint now);

// Removes the entry of `type`; true when there was one.
bool remove_condition(nlohmann::json& conditions, const std::string& type);

// The entry of `type`, or nullptr.
const nlohmann::json* find_condition(const nlohmann::json& conditions, const std::string& type);
// Not on a temporary (`status.value("conditions", ...)` is one): the pointer would dangle.
const nlohmann::json* find_condition(nlohmann::json&& conditions, const std::string& type) = delete;

// True when an entry of `type` exists with that status.
bool condition_is(const nlohmann::json& conditions, const std::string& type,
                  const std::string& status);

}  // namespace commgate::op
