// The decision record: the first decision for a TrainingJob's spec, written on the object
// (annotation commgate.io/decision-record, compact JSON) by whoever decided it (the
// webhook's /mutate, the operator). Later checks (/validate, another webhook replica,
// the operator) hold the object to its record and decide again only when the record is
// missing or the spec it was made for has changed since (decide once: two deciders one
// watch event apart, or a measurement that expires between two calls, never turn an
// admitted job into a refused one). docs/webhook.md "The decision record".
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/decision.h"
#include "core/time_format.h"
#include "core/training_job.h"

namespace commgate {

// The object a decision read: its name and the resourceVersion it had (empty for the
// built-in default policy and for objects read from files).
struct ObjectRef {
  std::string name;
  std::string resource_version;
  bool operator==(const ObjectRef&) const = default;
};

struct DecisionRecord {
  Action action = Action::kAdmit;
  int admitted_nodes = 0;   // what may run; 0 when denied
  int requested_nodes = 0;  // spec.numNodes as the user asked
  std::string reason;       // reason::* (or a job_decision.h code)
  ObjectRef policy;
  std::optional<ObjectRef> profile;  // the CommProfile used; nullopt when there was none
  TimePoint decided_at{};            // seconds precision (RFC 3339)
  // decision_spec_hash of the spec as stored after the decision (spec.numNodes lowered
  // by a downsize), so a check compares it with the object it holds.
  std::string spec_hash;
  // Gate and Deny only: the decision's message (what the job waits for, why it was
  // refused), for the checks that must quote it without deciding again.
  std::string message;
  // Who asked, on a Gate written before the policy could be known (NamespaceUnknown,
  // DecisionTimeout): the operator's later decision counts their exemptions, which it
  // cannot learn otherwise (it sees no request). Followed only from a signed record.
  std::optional<Requester> requester;
  // HMAC-SHA256 (64 hex digits) of record_signing_text, with the key only the webhook and
  // the operator read; empty when the decider had no key (RecordAuthenticator).
  std::string mac;

  bool operator==(const DecisionRecord&) const = default;
};

// A hash (FNV-1a 64, 16 hex digits) of every spec field decide() reads: numNodes,
// minNodes, numProcPerNode, nodeSelector, policyRef and all of model. Not suspend (a gate
// sets it), not the template, tolerations or runPolicy. Stable across builds and
// processes: the webhook and the operator compare each other's hashes.
std::string decision_spec_hash(const TrainingJobSpec& spec);
// The same hash for `spec` with spec.numNodes set to `num_nodes` (the spec as stored after a
// downsize), without copying the spec and its pod template.
std::string decision_spec_hash(const TrainingJobSpec& spec, int num_nodes);

// Compact JSON, keys: action, admittedNodes, requestedNodes, reason, policy{name,
// resourceVersion}, profile{name, resourceVersion} (when one was used), decidedAt,
// specHash, message (Gate and Deny), requester{username, groups} (when set), mac (when
// signed).
std::string to_annotation(const DecisionRecord& record);
// nullopt (and `error`, when given, says why) for anything that is not a record this
// version wrote: a malformed record counts as no record, so the job is decided again.
std::optional<DecisionRecord> parse_decision_record(std::string_view text,
                                                    std::string* error = nullptr);
// The annotations a decider writes on the object with a record, in this order:
// commgate.io/decision (the action), commgate.io/reason, commgate.io/requested-nodes and
// commgate.io/decision-record (to_annotation). /mutate and the operator both write them
// from here, so /validate's check that they agree with the record holds for either.
std::vector<std::pair<std::string, std::string>> decision_annotations(const DecisionRecord& record);

// The record in job.metadata.annotations, or nullopt when absent or malformed.
std::optional<DecisionRecord> decision_record_of(const TrainingJob& job);

// Signs records and checks their signatures (issue #19 item 2): the record's spec hash is
// a hash anyone can compute, so without a key a user could write or copy a record that
// the operator would follow. server/record_signer.h implements it with HMAC-SHA256 and
// the key in the chart's Secret; without one (tests, `commgate evaluate`), records are
// trusted as they are.
class RecordAuthenticator {
 public:
  virtual ~RecordAuthenticator() = default;
  // Sets record.mac for a record written on the job record_subject names.
  virtual void sign(DecisionRecord& record, std::string_view subject) const = 0;
  virtual bool verifies(const DecisionRecord& record, std::string_view subject) const = 0;
};

// The job a record is for: "<namespace>/<name>", or "<namespace>/<generateName>*" for a
// CREATE that has only generateName (the API server picks the name after admission).
// A record signed for one job does not verify on another: copied to a new job (another
// name, or another namespace) it is decided again.
std::string record_subject(const ObjectMeta& meta);

// What a record's signature covers: a version tag, record_subject and the record without
// its mac.
std::string record_signing_text(const DecisionRecord& record, std::string_view subject);

// How far a record's decidedAt may be before the job's creationTimestamp (clocks of the
// webhook's and the API server's nodes): a record older than that was copied.
inline constexpr std::chrono::minutes kRecordClockSkew{5};

// Why the record on `job` is not to be followed ("" when it is): with an authenticator,
// a record without a signature, one whose signature does not verify, or one decided
// before the job was created. Callers decide again instead of following it.
std::string record_distrust(const DecisionRecord& record, const TrainingJob& job,
                            const RecordAuthenticator* authenticator);

// What a record says about the object that carries it.
enum class RecordVerdict {
  kSpecChanged,            // the spec is not the one decided: decide again
  kHolds,                  // admitted (Admit, Downsize, Warn) or gated and suspended
  kDenied,                 // the decision was Deny: refuse with record.message
  kUnsuspendedWhileGated,  // Gate, but spec.suspend is false: refuse, the job must wait
  kNodesDifferFromRecord,  // spec.numNodes is not the admitted count: refuse
};
RecordVerdict check_against_record(const DecisionRecord& record, const TrainingJobSpec& spec);

// The field paths of the decision-relevant spec (what decision_spec_hash reads) that differ
// between `before` and `after`, in spec order: spec.numNodes, spec.minNodes,
// spec.numProcPerNode, spec.nodeSelector, spec.policyRef.name, spec.model.<field>.
std::vector<std::string> decision_fields_changed(const TrainingJobSpec& before,
                                                 const TrainingJobSpec& after);

// Whether a TrainingJob's status (as the operator writes it, docs/operator.md "Status")
// says its training workload (the Job) was created: the operator sets the Running
// condition from the Job's state once it exists (any reason but Suspended, when nothing
// was started, PreviousWorkloadExists, when the Job found is an earlier TrainingJob's, and
// WorkloadNameTaken, when it is a Job commgate did not create),
// and phase Running or Succeeded only from it. Phase Admitted or Failed alone is not
// enough (a suspended admitted job; a probe that failed for good). From then on a change of
// the decision-relevant spec cannot be applied: the Job's pods and their torchrun world size
// are fixed when it is created.
bool workload_created(const nlohmann::json& status);
// The same from the phase and the Running condition's reason ("" when there is none).
bool workload_created(const std::string& phase, const std::string& running_reason);

// The words for a spec change that cannot be applied to the running workload, e.g. "the
// training Job already runs with 2 nodes; delete and resubmit the TrainingJob to change
// spec.numNodes". `nodes`: the workload's (status.admittedNodes); `phase`: status.phase
// (a Job that Succeeded or Failed "ran" rather than "runs").
std::string spec_change_not_applied_message(int nodes, const std::string& phase,
                                            const std::vector<std::string>& fields);

}  // namespace commgate
