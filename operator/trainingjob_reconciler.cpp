#include "operator/trainingjob_reconciler.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <utility>

#include "core/comm_profile.h"
#include "core/decision_record.h"
#include "core/field_errors.h"
#include "core/measurement.h"
#include "core/profile_recording.h"
#include "core/prometheus_text.h"
#include "core/quantity.h"
#include "kube/api_error.h"
#include "operator/conditions.h"
#include "operator/workload_state.h"

namespace commgate::op {

using kube::Action;
using kube::ApiError;
using kube::ReconcileError;
using kube::ReconcileResult;
using nlohmann::json;

namespace {

inline constexpr const char* kTrainingJobs = "/apis/commgate.io/v1alpha1/namespaces/";
inline constexpr const char* kProfiles = "/apis/commgate.io/v1alpha1/commprofiles";
// Set by the Job controller on a Job's pods: the Job's metadata.uid.
inline constexpr const char* kControllerUidLabel = "batch.kubernetes.io/controller-uid";

// The TrainingJob was deleted while it was being reconciled (a write answered 404).
struct JobGone {};

std::string trainingjob_path(const std::string& ns, const std::string& name) {
  return std::string(kTrainingJobs) + ns + "/trainingjobs/" + name;
}
std::string jobs_collection(const std::string& ns) {
  return "/apis/batch/v1/namespaces/" + ns + "/jobs";
}
std::string services_collection(const std::string& ns) {
  return "/api/v1/namespaces/" + ns + "/services";
}
std::string pods_collection(const std::string& ns) {
  return "/api/v1/namespaces/" + ns + "/pods";
}
std::string profile_path(const std::string& pool) {
  return std::string(kProfiles) + "/" + pool;
}

std::optional<json> get_or_null(const kube::Reader& reader, const std::string& path) {
  try {
    return reader.get(path);
  } catch (const ApiError& e) {
    if (e.not_found()) return std::nullopt;
    throw;
  }
}

// Creates `object` unless it exists (409 AlreadyExists). Returns true when this call
// created it.
bool create_if_absent(kube::Writer& writer, const std::string& collection, const json& object) {
  try {
    writer.create(collection, object);
    return true;
  } catch (const ApiError& e) {
    if (e.already_exists()) return false;
    throw;
  }
}

void remove_if_present(kube::Writer& writer, const std::string& path,
                       const kube::DeleteOptions& options = {}) {
  try {
    writer.remove(path, options);
  } catch (const ApiError& e) {
    if (!e.not_found()) throw;
  }
}

// resourceVersions are opaque to clients, but the API servers commgate runs against
// (etcd's revisions, the sim's counter) give integers; anything else reads as -1.
long long version_number(const std::string& rv) {
  char* end = nullptr;
  const long long n = std::strtoll(rv.c_str(), &end, 10);
  return rv.empty() || *end != '\0' ? -1 : n;
}

int64_t generation_of(const json& object) {
  const json meta = object.value("metadata", json::object());
  const json& g = meta.value("generation", json(0));
  return g.is_number_integer() ? g.get<int64_t>() : 0;
}

std::string meta_string(const json& object, const std::string& key) {
  const json meta = object.value("metadata", json::object());
  const json& v = meta.value(key, json());
  return v.is_string() ? v.get<std::string>() : "";
}

// The uid of an object's controller (ownerReferences[] with controller: true), or "".
std::string controller_uid_of(const json& object) {
  const json meta = object.value("metadata", json::object());
  const json refs = meta.is_object() ? meta.value("ownerReferences", json::array()) : json();
  if (!refs.is_array()) return "";
  for (const json& r : refs) {
    if (r.is_object() && r.value("controller", json(false)) == json(true)) {
      const json& uid = r.value("uid", json());
      return uid.is_string() ? uid.get<std::string>() : "";
    }
  }
  return "";
}

std::string annotation_of(const json& object, const std::string& key) {
  const json meta = object.value("metadata", json::object());
  const json anns = meta.value("annotations", json::object());
  const json& v = anns.is_object() ? anns.value(key, json()) : json();
  return v.is_string() ? v.get<std::string>() : "";
}

int int_field(const json& object, const std::string& key) {
  if (!object.is_object()) return 0;
  const json& v = object.value(key, json(0));
  return v.is_number_integer() ? v.get<int>() : 0;
}

bool is_measurement_gate(const std::string& why) {
  return why == reason::kNoMeasurement || why == reason::kStaleMeasurement ||
         why == reason::kNoCompute || why == reason::kExtrapolationTooFar;
}

const char* decision_phase(commgate::Action action) {
  switch (action) {
    case commgate::Action::kDownsize:
      return phase::kDownsized;
    case commgate::Action::kDeny:
      return phase::kRejected;
    case commgate::Action::kGate:
      return phase::kGated;
    case commgate::Action::kAdmit:
    case commgate::Action::kWarn:
      break;
  }
  return phase::kAdmitted;
}

bool admits(commgate::Action a) {
  return a == commgate::Action::kAdmit || a == commgate::Action::kDownsize ||
         a == commgate::Action::kWarn;
}

std::string two_decimals(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

// What identifies a decision for counting: a new one differs in one of these.
bool same_decision(const json& a, const json& b) {
  if (!a.is_object() || !b.is_object()) return false;
  for (const char* k : {"action", "reason", "requestedNodes", "admittedNodes", "policy"}) {
    if (a.value(k, json()) != b.value(k, json())) return false;
  }
  return true;
}

// A Decision standing for a record that the webhook wrote (no predictions).
Decision decision_of_record(const DecisionRecord& r) {
  Decision d;
  d.action = r.action;
  d.reason = r.reason;
  d.message =
      r.message.empty() ? std::string("decided at admission by commgate's webhook") : r.message;
  d.requested_nodes = r.requested_nodes;
  d.admitted_nodes = r.admitted_nodes;
  d.policy_name = r.policy.name.empty() ? "default" : r.policy.name;
  return d;
}

// A decision put in status.decision (and the measurement it used); counted on its policy
// when it is new.
void put_decision(json& status, const Decision& d, const Measurement* m,
                  std::optional<Decision>& to_count) {
  json dj = decision_to_json(d);
  if (!same_decision(status.value("decision", json()), dj)) to_count = d;
  status["decision"] = std::move(dj);
  if (m) status["measurement"] = measurement_to_status(*m);
}

}  // namespace

struct TrainingJobReconciler::Context {
  std::string key, ns, name, path;
  json object;  // the TrainingJob as last read or written
  TrainingJob job;
  json status = json::object();  // the status to write; starts as the object's
  TimePoint now{};
  std::shared_ptr<const Snapshot> snapshot;
  std::optional<CommProfile> overlay;  // the pool's profile as read or written just now
  Step step = Step::kRead;
  // A decision newly put in status.decision: counted on its policy once the status is
  // written.
  std::optional<Decision> to_count;

  void condition(const char* type, const char* status_value, const std::string& reason,
                 const std::string& message) {
    set_condition(status["conditions"],
                  Condition{type, status_value, reason, message, generation_of(object)}, now);
  }
  void set_phase(const char* p) { status["phase"] = p; }
  std::string pool() const { return pool_name(job.spec.node_selector); }
};

// ---------------------------------------------------------------------------------------
// Pure helpers

std::chrono::seconds probe_retry_delay(const RetryStrategy& s, int retry) {
  const int64_t max = std::max(1, s.backoff_max_seconds);
  int64_t delay = std::max(1, s.backoff_base_seconds);
  for (int i = 1; i < retry && delay < max; ++i) delay *= 2;
  return std::chrono::seconds(std::min(delay, max));
}

json measurement_to_status(const Measurement& m) {
  json j = {{"source", m.source},
            {"probeTime", format_rfc3339(m.measured_at)},
            {"busbwGBps", m.link.busbw_bytes_per_s / 1e9},
            {"latencyUs", m.link.latency_s * 1e6},
            {"fitPoor", m.link.poor}};
  if (m.nodes_probed > 0) j["nodesProbed"] = m.nodes_probed;
  if (m.procs_per_node > 0) j["procsPerNode"] = m.procs_per_node;
  auto text = [&](const char* key, const std::string& value) {
    if (!value.empty()) j[key] = value;
  };
  text("backend", m.backend);
  text("transport", m.transport);
  text("interface", m.interface_name);
  text("device", m.device);
  text("gpuProduct", m.gpu_product);
  if (m.link.poor) text("fitNote", m.link.note);
  if (m.compute) {
    j["computeStepMs"] = m.compute->total_s() * 1e3;
    j["computeSource"] = m.compute_source == ComputeSource::kHint ? "hint" : "measured";
  }
  if (m.measured_ddp_step) {
    j["measuredStepMs"] = m.measured_ddp_step->step_time_ms;
    j["exposedCommMs"] = m.measured_ddp_step->exposed_comm_ms;
    j["measuredCommShare"] = std::clamp(m.measured_ddp_step->comm_share, 0.0, 1.0);
  }
  return j;
}

std::string decision_event_note(const Decision& d, const CommPolicy& policy, const Measurement* m) {
  const std::string busbw =
      m ? "; measured all-reduce busbw " + format_gbps(m->link.busbw_bytes_per_s) : "";
  switch (d.action) {
    case commgate::Action::kDownsize: {
      std::string note = "downsized from " + std::to_string(d.requested_nodes) + " to " +
                         format_nodes(d.admitted_nodes);
      const StepPrediction* asked = d.prediction_for(d.requested_nodes);
      const StepPrediction* given = d.prediction_for(d.admitted_nodes);
      if (asked && given) {
        const double max = policy.spec.max_comm_share;
        if (asked->comm_share > max || !policy.spec.min_scaling_efficiency) {
          note += ": predicted communication share " + two_decimals(asked->comm_share) + " > " +
                  two_decimals(max) + " at " + format_nodes(d.requested_nodes) + ", " +
                  two_decimals(given->comm_share) + " at " + format_nodes(d.admitted_nodes);
        } else {
          note += ": predicted scaling efficiency " + two_decimals(asked->scaling_efficiency) +
                  " < " + two_decimals(*policy.spec.min_scaling_efficiency) + " at " +
                  format_nodes(d.requested_nodes) + ", " + two_decimals(given->scaling_efficiency) +
                  " at " + format_nodes(d.admitted_nodes);
        }
      }
      return note + " (CommPolicy " + d.policy_name + busbw + ")";
    }
    case commgate::Action::kAdmit:
      return "admitted at " + format_nodes(d.admitted_nodes) + ": " + d.message;
    case commgate::Action::kWarn:
      return "admitted at " + format_nodes(d.admitted_nodes) + " over policy: " + d.message;
    case commgate::Action::kDeny:
      return "denied: " + d.message;
    case commgate::Action::kGate:
      break;
  }
  return "suspended until measured: " + d.message;
}

std::vector<std::string> trainingjobs_waiting_on_pool(const std::vector<json>& trainingjobs,
                                                      const std::string& pool) {
  std::vector<std::string> keys;
  for (const json& tj : trainingjobs) {
    if (!tj.is_object()) continue;
    const json spec = tj.value("spec", json::object());
    if (!spec.is_object() || spec.value("suspend", json(false)) != json(true)) continue;
    std::map<std::string, std::string> selector;
    const json ns_sel = spec.value("nodeSelector", json::object());
    if (ns_sel.is_object()) {
      for (const auto& [k, v] : ns_sel.items()) {
        if (v.is_string()) selector[k] = v.get<std::string>();
      }
    }
    if (pool_name(selector) != pool) continue;
    keys.push_back(meta_string(tj, "namespace") + "/" + meta_string(tj, "name"));
  }
  std::sort(keys.begin(), keys.end());
  return keys;
}

const char* TrainingJobReconciler::to_string(Step step) {
  switch (step) {
    case Step::kRead:
      return "read";
    case Step::kProfile:
      return "profile";
    case Step::kProbe:
      return "probe";
    case Step::kCollect:
      return "collect";
    case Step::kDecide:
      return "decide";
    case Step::kWorkload:
      return "workload";
    case Step::kStatus:
      return "status";
  }
  return "unknown";
}

// ---------------------------------------------------------------------------------------
// The reconciler

TrainingJobReconciler::TrainingJobReconciler(
    const kube::Reader& reader, const kube::Reader& live_reader, kube::Writer& writer,
    kube::StatusWriter& status_writer, std::function<std::shared_ptr<const Snapshot>()> snapshot,
    kube::EventRecorder& events, std::function<TimePoint()> now, ReconcilerSettings settings)
    : reader_(reader),
      live_reader_(live_reader),
      writer_(writer),
      status_writer_(status_writer),
      snapshot_(std::move(snapshot)),
      events_(events),
      now_(std::move(now)),
      settings_(std::move(settings)),
      counters_(reader, status_writer) {}

void TrainingJobReconciler::enter(Context& ctx, Step step) {
  ctx.step = step;
  std::lock_guard lock(metrics_mu_);
  ++metrics_.reconciles[to_string(step)];
}

void TrainingJobReconciler::event(const Context& ctx, const std::string& type,
                                  const std::string& reason, const std::string& action,
                                  const std::string& note) {
  const kube::ObjectRef ref{kApiVersion, "TrainingJob", ctx.ns, ctx.name,
                            meta_string(ctx.object, "uid")};
  events_.record(ref, type, reason, action, note);
}

ReconcileResult TrainingJobReconciler::reconcile(const std::string& key) {
  Context ctx;
  ctx.key = key;
  const auto slash = key.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == key.size() ||
      key.find('/', slash + 1) != std::string::npos)
    return ReconcileError::terminal("not a namespace/name key: \"" + key + "\"");
  ctx.ns = key.substr(0, slash);
  ctx.name = key.substr(slash + 1);
  ctx.path = trainingjob_path(ctx.ns, ctx.name);
  ctx.now = now_();
  ctx.snapshot = snapshot_();
  if (!ctx.snapshot) return ReconcileError::retryable("no snapshot of policies and profiles yet");
  auto failed = [&](const std::string& message) {
    std::lock_guard lock(metrics_mu_);
    ++metrics_.errors[to_string(ctx.step)];
    return std::string(to_string(ctx.step)) + ": " + message;
  };
  try {
    return run(ctx);
  } catch (const JobGone&) {
    return Action::await_change();  // deleted mid-reconcile: nothing left to do
  } catch (const ApiError& e) {
    if (e.conflict())
      return ReconcileError::retryable(
          failed(std::string("conflict, read again on the next try: ") + e.what()));
    return ReconcileError::retryable(failed(e.what()));
  } catch (const std::exception& e) {
    return ReconcileError::retryable(failed(e.what()));
  }
}

ReconcileResult TrainingJobReconciler::run(Context& ctx) {
  enter(ctx, Step::kRead);
  auto object = get_or_null(reader_, ctx.path);
  if (!object) {
    std::lock_guard lock(written_mu_);
    written_.erase(ctx.key);
    return Action::await_change();
  }
  if (cache_is_behind(ctx.key, *object))
    return Action::requeue_after(std::chrono::milliseconds(100));  // its watch event is near
  ctx.object = std::move(*object);
  // Being deleted: the garbage collector removes what it owns; nothing to start now.
  if (!meta_string(ctx.object, "deletionTimestamp").empty()) return Action::await_change();
  const json& status = ctx.object.value("status", json::object());
  ctx.status = status.is_object() ? status : json::object();
  try {
    ctx.job = parse_training_job(ctx.object);
  } catch (const ValidationError& e) {
    return invalid_spec(ctx, e.what());
  }
  remove_condition(ctx.status["conditions"], condition::kSpecValid);
  if (ctx.status["conditions"].empty()) ctx.status.erase("conditions");
  // A name the workload cannot take would be refused (422) whatever is decided: say so
  // before anything is probed, and stop.
  if (const std::string problem = workload_name_problem(ctx.job); !problem.empty())
    return fail_for_good(ctx, op_reason::kInvalidWorkloadName, problem, "Validate");

  const std::optional<DecisionRecord> record = decision_record_of(ctx.job);
  const auto verdict =
      record ? check_against_record(*record, ctx.job.spec) : RecordVerdict::kSpecChanged;
  if (record && record->action != commgate::Action::kGate &&
      (verdict == RecordVerdict::kHolds || verdict == RecordVerdict::kDenied))
    return follow_record(ctx, *record);
  return decide_gated(
      ctx, record && record->action == commgate::Action::kGate && verdict == RecordVerdict::kHolds);
}

void TrainingJobReconciler::remember_write(const Context& ctx) {
  const long long written = version_number(meta_string(ctx.object, "resourceVersion"));
  std::lock_guard lock(written_mu_);
  written_[ctx.key] = written;
}

bool TrainingJobReconciler::cache_is_behind(const std::string& key, const json& cached) {
  std::lock_guard lock(written_mu_);
  const auto it = written_.find(key);
  if (it == written_.end()) return false;
  if (version_number(meta_string(cached, "resourceVersion")) < it->second) return true;
  written_.erase(it);  // the cache has caught up
  return false;
}

ReconcileResult TrainingJobReconciler::invalid_spec(Context& ctx, const std::string& message) {
  ctx.condition(condition::kSpecValid, kFalse, op_reason::kInvalidSpec, message);
  event(ctx, "Warning", op_reason::kInvalidSpec, "Validate", message);
  sync_status(ctx);
  return ReconcileError::terminal("invalid TrainingJob " + ctx.key + ": " + message);
}

JobDecision TrainingJobReconciler::decide_now(const Context& ctx) const {
  if (!ctx.overlay) return decide_for_job(ctx.job, *ctx.snapshot, Requester{}, ctx.now);
  Snapshot with_profile = *ctx.snapshot;
  with_profile.profiles[ctx.overlay->metadata.name] = *ctx.overlay;
  return decide_for_job(ctx.job, with_profile, Requester{}, ctx.now);
}

// ----- follow a decision that holds ------------------------------------------------------

ReconcileResult TrainingJobReconciler::follow_record(Context& ctx, const DecisionRecord& record) {
  const json& observed = ctx.status.value("observedGeneration", json());
  const bool status_of_older_spec =
      !observed.is_number_integer() || observed.get<int64_t>() != generation_of(ctx.object);
  if (!ctx.status.value("decision", json()).is_object() || status_of_older_spec) {
    // Decided before the operator saw the job, or this spec (by the webhook, again after
    // an edit, perhaps to the same action and count): show that decision, with its
    // predictions when deciding the request again agrees with the record.
    TrainingJob as_requested = ctx.job;
    as_requested.spec.num_nodes = record.requested_nodes;
    std::swap(ctx.job, as_requested);
    const JobDecision jd = decide_now(ctx);
    std::swap(ctx.job, as_requested);
    if (jd.policy && jd.decision.action == record.action &&
        jd.decision.admitted_nodes == record.admitted_nodes) {
      put_decision(ctx.status, jd.decision, jd.measurement ? &*jd.measurement : nullptr,
                   ctx.to_count);
    } else {
      put_decision(ctx.status, decision_of_record(record), nullptr, ctx.to_count);
    }
  }
  const std::string message = ctx.status["decision"].value("message", record.message);
  if (record.action == commgate::Action::kDeny) {
    ctx.set_phase(phase::kRejected);
    ctx.status["admittedNodes"] = 0;
    ctx.condition(condition::kAdmitted, kFalse, record.reason, message);
    sync_status(ctx);
    return Action::await_change();
  }
  ctx.condition(condition::kAdmitted, kTrue, record.reason, message);
  return launch_and_sync(ctx, record);
}

// ----- gated: profile, probe, collect, decide ---------------------------------------------

ReconcileResult TrainingJobReconciler::decide_gated(Context& ctx, bool gate_recorded) {
  enter(ctx, Step::kDecide);
  // A new spec (a new generation since the status was written) gets fresh probe attempts.
  const json& observed = ctx.status.value("observedGeneration", json());
  if (observed.is_number_integer() && observed.get<int64_t>() != generation_of(ctx.object)) {
    ctx.status.erase("probeAttempts");
    ctx.status.erase("nextProbeTime");
    remove_condition(ctx.status["conditions"], condition::kFailed);
  }
  JobDecision jd = decide_now(ctx);
  if (!jd.policy) {
    ctx.condition(condition::kAdmitted, kFalse, op_reason::kPolicyNotFound, jd.policy_error);
    sync_status(ctx);
    return ReconcileError::terminal(jd.policy_error);
  }
  if (jd.decision.action != commgate::Action::kGate) return apply_decision(ctx, jd);

  // Still gated: make sure the pool's CommProfile exists, and decide again with it as
  // just read (the cache the snapshot comes from may lag behind it).
  const json profile = ensure_profile(ctx, jd.profile_name);
  enter(ctx, Step::kDecide);
  jd = decide_now(ctx);
  if (!jd.policy) return ReconcileError::retryable(jd.policy_error);
  if (jd.decision.action != commgate::Action::kGate) return apply_decision(ctx, jd);

  if (!gate_recorded) {
    // No webhook gated it (or the spec changed without one): the operator does.
    patch_decision(ctx, jd, record_of(jd, ctx.job, ctx.now));
    event(ctx, "Normal", "Gated", "Decide", decision_event_note(jd.decision, *jd.policy, nullptr));
  }
  put_decision(ctx.status, jd.decision, jd.measurement ? &*jd.measurement : nullptr, ctx.to_count);
  ctx.status.erase("admittedNodes");
  if (is_measurement_gate(jd.decision.reason) &&
      condition_is(ctx.status.value("conditions", json::array()), condition::kFailed, kTrue)) {
    // Failed for good: until the spec changes, with the Admitted condition fail_for_good
    // wrote (why no probe can measure the pool), not the gate's "no measurement yet".
    ctx.set_phase(phase::kFailed);
    sync_status(ctx);
    return Action::await_change();
  }
  ctx.condition(condition::kAdmitted, kFalse, jd.decision.reason, jd.decision.message);
  if (!is_measurement_gate(jd.decision.reason)) {
    ctx.set_phase(phase::kGated);
    sync_status(ctx);
    return Action::await_change();
  }
  if (auto why = beyond_probe_reach(ctx, jd)) return fail_for_good(ctx, jd.decision.reason, *why);
  return probe_or_collect(ctx, jd, profile);
}

json TrainingJobReconciler::ensure_profile(Context& ctx, const std::string& pool) {
  enter(ctx, Step::kProfile);
  std::optional<json> profile = get_or_null(reader_, profile_path(pool));
  if (!profile) {
    json selector = json::object();
    for (const auto& [k, v] : ctx.job.spec.node_selector) selector[k] = v;
    const json wanted = {
        {"apiVersion", kApiVersion},
        {"kind", "CommProfile"},
        {"metadata", {{"name", pool}, {"labels", {{kManagedByLabel, kManagedByValue}}}}},
        {"spec", {{"nodeSelector", selector}}}};
    try {
      profile = writer_.create(kProfiles, wanted);
    } catch (const ApiError& e) {
      if (!e.already_exists()) throw;
      // Created by another reconcile (or by this one's earlier try whose answer was lost):
      // from the API server, which has it, not from a cache that may not yet.
      profile = live_reader_.get(profile_path(pool));
    }
  }
  try {
    ctx.overlay = parse_comm_profile(*profile, ctx.now);
  } catch (const ValidationError&) {
    ctx.overlay.reset();  // unusable as it is: decided as having no measurement
  }
  // A measurement this process recorded that the cache has not caught up with yet (the
  // reconcile that wrote it failed later, and the retry came before the watch event):
  // use it rather than probing the pool again.
  std::lock_guard lock(recorded_mu_);
  if (auto it = recorded_.find(pool); it != recorded_.end()) {
    if (version_number(it->second.metadata.resource_version) >
        version_number(meta_string(*profile, "resourceVersion")))
      ctx.overlay = it->second;
    else
      recorded_.erase(it);  // the cache has it
  }
  return *profile;
}

std::optional<CommProfile> TrainingJobReconciler::profile_newer_than(Context& ctx,
                                                                     const std::string& pool,
                                                                     const json& seen) {
  const long long seen_version = version_number(meta_string(seen, "resourceVersion"));
  {
    std::lock_guard lock(recorded_mu_);
    if (auto it = recorded_.find(pool);
        it != recorded_.end() &&
        version_number(it->second.metadata.resource_version) > seen_version)
      return it->second;
  }
  // From the API server, not the cache: the cache of CommProfiles may lag behind the one
  // of Jobs (a watch dropped and not yet relisted), showing the probe gone but not the
  // measurement it left; one GET per probe about to be created closes that window.
  const std::optional<json> now = get_or_null(live_reader_, profile_path(pool));
  if (!now || version_number(meta_string(*now, "resourceVersion")) <= seen_version)
    return std::nullopt;
  try {
    return parse_comm_profile(*now, ctx.now);
  } catch (const ValidationError&) {
    return std::nullopt;
  }
}

ReconcileResult TrainingJobReconciler::probe_or_collect(Context& ctx, const JobDecision& jd,
                                                        const json& profile) {
  enter(ctx, Step::kProbe);
  const std::string& pool = jd.profile_name;
  const std::string name = probe_job_name(pool);
  const std::string& ns = settings_.probe.ns;
  // Another worker (or replica) may have collected the pool's probe since this
  // reconcile read the profile: recorded its measurement, then deleted the Job. Decided
  // from that measurement, when there is one, instead of probing the pool again.
  auto decided_by_newer_measurement = [&]() -> std::optional<ReconcileResult> {
    std::optional<CommProfile> newer = profile_newer_than(ctx, pool, profile);
    if (!newer) return std::nullopt;
    ctx.overlay = std::move(newer);
    enter(ctx, Step::kDecide);
    const JobDecision now_measured = decide_now(ctx);
    if (now_measured.policy && now_measured.decision.action != commgate::Action::kGate)
      return apply_decision(ctx, now_measured);
    enter(ctx, Step::kProbe);
    return std::nullopt;
  };
  const std::optional<json> probe = get_or_null(reader_, jobs_collection(ns) + "/" + name);
  if (!probe) {
    if (auto decided = decided_by_newer_measurement()) return std::move(*decided);
    return start_probe(ctx, jd, profile);
  }

  enter(ctx, Step::kCollect);
  const ProbeOutcome outcome = outcome_of(*probe);
  if (annotation_of(*probe, kProbeModelAnnotation) != probe_model_annotation(ctx.job.spec.model)) {
    if (outcome.state == ProbeState::kSucceeded && outcome.result) {
      // Another model's probe finished: its result goes into the profile (where the job
      // that asked for it finds it), and the pool is free for this job's probe.
      record_in_profile(ctx, pool, *outcome.result);
      delete_probe(*probe);
      enter(ctx, Step::kDecide);
      const JobDecision now_measured = decide_now(ctx);
      if (now_measured.policy && now_measured.decision.action != commgate::Action::kGate)
        return apply_decision(ctx, now_measured);
      enter(ctx, Step::kProbe);
      return start_probe(ctx, jd, profile);
    }
    // One probe per pool: another model's probe runs (or failed, and the job that asked
    // for it counts that); this job's model is probed next.
    ctx.set_phase(phase::kGated);
    ctx.condition(condition::kProbed, kFalse, op_reason::kWaitingForPoolProbe,
                  "waiting for probe " + ns + "/" + name + " of pool " + pool + " (for " +
                      annotation_of(*probe, kProbeForAnnotation) +
                      ", another model) to finish; this job's model is probed next");
    sync_status(ctx);
    return Action::requeue_after(settings_.probe_poll);
  }

  switch (outcome.state) {
    case ProbeState::kRunning:
      ctx.set_phase(phase::kProbing);
      ctx.condition(condition::kProbed, kFalse, kReasonProbeRunning,
                    "probe " + ns + "/" + name + " measures pool " + pool + " on " +
                        annotation_of(*probe, kProbeNodesAnnotation) + " node(s)" +
                        (outcome.message.empty() ? "" : ": " + outcome.message));
      sync_status(ctx);
      return Action::requeue_after(settings_.probe_poll);
    case ProbeState::kSucceeded:
      if (outcome.result) return collect(ctx, jd, *probe, *outcome.result);
      break;
    case ProbeState::kFailed:
    case ProbeState::kUnschedulable:
    case ProbeState::kInvalidResult:
      break;
  }
  // A cache behind the collection shows the Job ended and its pods gone ("rank 0's pod is
  // gone"): not a failure when the measurement it left is there (seen with watches
  // dropping: the failure counted, and the pool probed again).
  if (auto decided = decided_by_newer_measurement()) return std::move(*decided);
  delete_probe(*probe);
  return probe_failed(ctx, jd, outcome.reason.empty() ? kReasonProbeFailed : outcome.reason,
                      outcome.message);
}

ProbeOutcome TrainingJobReconciler::outcome_of(const json& probe) const {
  const ProbeOutcome cached = read_probe_outcome(probe, pods_of(probe, settings_.probe.ns));
  if (!cached.rank0_pod_missing) return cached;
  // The Job's Complete came through its watch before its pods through theirs (a probe of
  // milliseconds; seen on the sim): the API server has them. One list, only here.
  return read_probe_outcome(probe, pods_of(probe, settings_.probe.ns, live_reader_));
}

std::vector<json> TrainingJobReconciler::pods_of(const json& job, const std::string& ns) const {
  return pods_of(job, ns, reader_);
}

std::vector<json> TrainingJobReconciler::pods_of(const json& job, const std::string& ns,
                                                 const kube::Reader& reader) const {
  const std::string uid = meta_string(job, "uid");
  kube::ListOptions selected;
  selected.label_selector = std::string(kJobNameLabel) + "=" + meta_string(job, "name");
  std::vector<json> pods = reader.list(pods_collection(ns), selected).items;
  // Pods of an earlier Job of the same name (deleted, its pods not yet collected) carry
  // another controller-uid: they are not this Job's.
  std::erase_if(pods, [&](const json& pod) {
    const json meta = pod.value("metadata", json::object());
    const json labels = meta.is_object() ? meta.value("labels", json::object()) : json();
    const json& owner = labels.is_object() ? labels.value(kControllerUidLabel, json()) : json();
    return !uid.empty() && owner.is_string() && owner.get<std::string>() != uid;
  });
  return pods;
}

ReconcileResult TrainingJobReconciler::start_probe(Context& ctx, const JobDecision& jd,
                                                   const json& profile) {
  const std::string& pool = jd.profile_name;
  const json& next = ctx.status.value("nextProbeTime", json());
  if (next.is_string()) {
    if (auto at = parse_rfc3339(next.get<std::string>()); at && ctx.now < *at) {
      ctx.set_phase(phase::kGated);
      sync_status(ctx);
      return Action::requeue_after(
          std::chrono::duration_cast<kube::Clock::duration>(*at - ctx.now));
    }
  }
  const CommPolicy& policy = *jd.policy;
  ProbeRequest request;
  request.pool = pool;
  request.profile_uid = meta_string(profile, "uid");
  request.node_selector = ctx.job.spec.node_selector;
  request.tolerations = ctx.job.spec.tolerations;
  request.nodes = probe_node_count(ctx.job.spec.num_nodes, policy.spec.probe);
  request.procs_per_node = ctx.job.spec.num_proc_per_node;
  request.model = ctx.job.spec.model;
  request.policy_probe = policy.spec.probe;
  request.for_job = ctx.key;
  const ProbeObjects objects = build_probe(request, settings_.probe);
  const std::string& ns = settings_.probe.ns;
  create_if_absent(writer_, services_collection(ns), objects.service);
  const bool created = create_if_absent(writer_, jobs_collection(ns), objects.job);
  const int attempt = int_field(ctx.status, "probeAttempts") + 1;
  const int attempts = policy.spec.retry_strategy.backoff_limit_count + 1;
  const std::string what = "probe " + ns + "/" + probe_job_name(pool) + " measures pool " + pool +
                           " on " + format_nodes(request.nodes) + " (attempt " +
                           std::to_string(attempt) + " of " + std::to_string(attempts) + ")";
  if (created) {
    {
      std::lock_guard lock(metrics_mu_);
      ++metrics_.probes_created;
    }
    event(ctx, "Normal", "ProbeCreated", "Probe", what);
  }
  ctx.status.erase("nextProbeTime");
  ctx.set_phase(phase::kProbing);
  ctx.condition(condition::kProbed, kFalse, kReasonProbeRunning, what);
  sync_status(ctx);
  return Action::requeue_after(settings_.probe_poll);
}

void TrainingJobReconciler::record_in_profile(Context& ctx, const std::string& pool,
                                              const ProbeResult& result) {
  constexpr int kAttempts = 5;
  const std::string path = profile_path(pool);
  for (int attempt = 1;; ++attempt) {
    json object = reader_.get(path);
    {
      // Our own last write, when the cache has not shown it yet: start from it, or the
      // write would conflict (or, without a resourceVersion, drop it).
      std::lock_guard lock(recorded_mu_);
      if (auto it = recorded_.find(pool);
          it != recorded_.end() && version_number(it->second.metadata.resource_version) >
                                       version_number(meta_string(object, "resourceVersion"))) {
        json mine = to_json(it->second);
        object["metadata"]["resourceVersion"] = it->second.metadata.resource_version;
        object["status"] = mine.value("status", json::object());
      }
    }
    CommProfile profile;
    try {
      profile = parse_comm_profile(object, ctx.now);
    } catch (const ValidationError&) {
      // A status commgate cannot read is replaced by the new measurement.
      profile = CommProfile{};
      profile.metadata.name = pool;
      profile.node_selector = ctx.job.spec.node_selector;
    }
    record_probe_result(profile, result);
    object["status"] = to_json(profile).value("status", json::object());
    try {
      const json written = status_writer_.update_status(path, object);
      profile.metadata.resource_version = meta_string(written, "resourceVersion");
      {
        std::lock_guard lock(recorded_mu_);
        recorded_[pool] = profile;
      }
      ctx.overlay = std::move(profile);
      return;
    } catch (const ApiError& e) {
      if (!e.conflict() || attempt >= kAttempts) throw;
    }
  }
}

void TrainingJobReconciler::delete_probe(const json& probe) {
  const std::string& ns = settings_.probe.ns;
  const std::string name = meta_string(probe, "name");
  kube::DeleteOptions options;
  options.propagation_policy = "Background";
  // This probe, not one created under its name since it was read (a cache behind the
  // deletion showed the old one, a newer probe of the pool runs now): that one stays.
  options.precondition_uid = meta_string(probe, "uid");
  try {
    remove_if_present(writer_, jobs_collection(ns) + "/" + name, options);
  } catch (const ApiError& e) {
    if (e.conflict()) return;  // another probe's, its Service with it
    throw;
  }
  remove_if_present(writer_, services_collection(ns) + "/" + name);
}

ReconcileResult TrainingJobReconciler::collect(Context& ctx, const JobDecision& jd,
                                               const json& probe, const ProbeResult& result) {
  const std::string& pool = jd.profile_name;
  record_in_profile(ctx, pool, result);
  delete_probe(probe);
  if (auto created = parse_rfc3339(meta_string(probe, "creationTimestamp"))) {
    std::lock_guard lock(metrics_mu_);
    ++metrics_.probe_durations;
    metrics_.probe_seconds += std::chrono::duration<double>(ctx.now - *created).count();
  }
  ctx.status.erase("probeAttempts");
  ctx.status.erase("nextProbeTime");
  const std::string what = "pool " + pool + " measured on " + format_nodes(result.nodes) +
                           ": all-reduce busbw " + format_gbps(result.fit.busbw_bytes_per_s) +
                           " (" + result.backend + ", " + result.transport + ")";
  ctx.condition(condition::kProbed, kTrue, kReasonProbeSucceeded, what);
  event(ctx, "Normal", kReasonProbeSucceeded, "Probe", what);

  enter(ctx, Step::kDecide);
  const JobDecision measured = decide_now(ctx);
  if (!measured.policy) return ReconcileError::retryable(measured.policy_error);
  if (measured.decision.action == commgate::Action::kGate) {
    if (auto why = beyond_probe_reach(ctx, measured))
      return fail_for_good(ctx, measured.decision.reason, *why);
    return probe_failed(
        ctx, measured, op_reason::kMeasurementInsufficient,
        "the probe succeeded but the job still cannot be decided: " + measured.decision.message);
  }
  return apply_decision(ctx, measured);
}

ReconcileResult TrainingJobReconciler::probe_failed(Context& ctx, const JobDecision& jd,
                                                    const std::string& why,
                                                    const std::string& message) {
  const RetryStrategy& retry = jd.policy->spec.retry_strategy;
  const int failed = int_field(ctx.status, "probeAttempts") + 1;
  const int attempts = retry.backoff_limit_count + 1;
  ctx.status["probeAttempts"] = failed;
  {
    std::lock_guard lock(metrics_mu_);
    ++metrics_.probe_failures[why];
  }
  const std::string pool = jd.profile_name;
  const std::string what = "probe of pool " + pool + " failed (attempt " + std::to_string(failed) +
                           " of " + std::to_string(attempts) +
                           "): " + (message.empty() ? why : message);
  ctx.condition(condition::kProbed, kFalse, why, what);
  if (failed >= attempts) {
    ctx.status.erase("nextProbeTime");
    // The scheduler's message ends its sentence ("... node selector."): one stop, not ".;".
    const std::string clause = what.ends_with('.') ? what.substr(0, what.size() - 1) : what;
    return fail_for_good(
        ctx, op_reason::kProbeFailed,
        clause +
            "; commgate cannot decide this job without a measurement of its pool, so it does "
            "not run. Check that " +
            format_nodes(probe_node_count(ctx.job.spec.num_nodes, jd.policy->spec.probe)) +
            " of nodeSelector " + format_node_selector(ctx.job.spec.node_selector) +
            " are schedulable, then change the spec (or delete and resubmit the job) to probe "
            "again");
  }
  const auto delay = probe_retry_delay(retry, failed);
  ctx.status["nextProbeTime"] = format_rfc3339(ctx.now + delay);
  ctx.set_phase(phase::kGated);
  event(ctx, "Warning", why, "Probe",
        what + "; retrying in " + std::to_string(delay.count()) + " s");
  sync_status(ctx);
  return Action::requeue_after(delay);
}

std::optional<std::string> TrainingJobReconciler::beyond_probe_reach(const Context& ctx,
                                                                     const JobDecision& jd) const {
  if (jd.decision.reason != reason::kExtrapolationTooFar || !jd.measurement) return std::nullopt;
  const ProbeSettings& probe = jd.policy->spec.probe;
  const int reach = probe_node_count(ctx.job.spec.num_nodes, probe);
  if (jd.measurement->nodes_probed < reach) return std::nullopt;  // a larger probe helps
  const int k = std::max(1, jd.policy->spec.max_extrapolation);
  return jd.decision.message + " The pool was probed on " +
         format_nodes(jd.measurement->nodes_probed) + ", as many as CommPolicy " +
         jd.policy->metadata.name + " lets a probe take (probe.maxNodes " +
         std::to_string(probe.max_nodes) + "), so no probe can decide " +
         format_nodes(ctx.job.spec.num_nodes) + ": ask for at most " +
         std::to_string(static_cast<int64_t>(k) * jd.measurement->nodes_probed) +
         " nodes, or have an admin raise probe.maxNodes or maxExtrapolation";
}

ReconcileResult TrainingJobReconciler::fail_for_good(Context& ctx, const std::string& why,
                                                     const std::string& message,
                                                     const std::string& action) {
  ctx.set_phase(phase::kFailed);
  ctx.condition(condition::kFailed, kTrue, why, message);
  ctx.condition(condition::kAdmitted, kFalse, why, message);
  event(ctx, "Warning", why, action, message);
  sync_status(ctx);
  return Action::await_change();
}

// ----- decide ---------------------------------------------------------------------------

void TrainingJobReconciler::patch_decision(Context& ctx, const JobDecision& jd,
                                           const DecisionRecord& record) {
  json annotations = json::object();
  for (const auto& [key, value] : decision_annotations(record)) annotations[key] = value;
  json spec = {{"suspend", !admits(record.action)}};
  if (record.action == commgate::Action::kDownsize) spec["numNodes"] = record.admitted_nodes;
  const json patch = {{"metadata",
                       {{"resourceVersion", meta_string(ctx.object, "resourceVersion")},
                        {"annotations", annotations}}},
                      {"spec", spec}};
  const int64_t before = generation_of(ctx.object);
  try {
    ctx.object = writer_.patch(ctx.path, kube::PatchType::kMerge, patch);
  } catch (const ApiError& e) {
    if (e.not_found()) throw JobGone{};
    throw;
  }
  remember_write(ctx);
  ctx.job = parse_training_job(ctx.object);
  // Conditions computed for the spec before this patch hold for the patched one: the
  // patch is this decision's own.
  const int64_t after = generation_of(ctx.object);
  if (ctx.status.contains("conditions") && ctx.status["conditions"].is_array()) {
    for (json& c : ctx.status["conditions"]) {
      if (c.is_object() && c.value("observedGeneration", json()) == json(before))
        c["observedGeneration"] = after;
    }
  }
  std::lock_guard lock(metrics_mu_);
  ++metrics_.decisions[commgate::to_string(jd.decision.action)];
}

ReconcileResult TrainingJobReconciler::apply_decision(Context& ctx, const JobDecision& jd) {
  enter(ctx, Step::kDecide);
  const Decision& d = jd.decision;
  const DecisionRecord record = record_of(jd, ctx.job, ctx.now);
  patch_decision(ctx, jd, record);
  const Measurement* m = jd.measurement ? &*jd.measurement : nullptr;
  const std::string note = decision_event_note(d, *jd.policy, m);
  switch (d.action) {
    case commgate::Action::kAdmit:
      event(ctx, "Normal", "Admitted", "Decide", note);
      break;
    case commgate::Action::kDownsize:
      event(ctx, "Normal", "Downsized", "Decide", note);
      break;
    case commgate::Action::kWarn:
      event(ctx, "Warning", "AdmittedOverPolicy", "Decide", note);
      break;
    case commgate::Action::kDeny:
      event(ctx, "Warning", "Denied", "Decide", note);
      break;
    case commgate::Action::kGate:
      event(ctx, "Normal", "Gated", "Decide", note);
      break;
  }
  put_decision(ctx.status, d, m, ctx.to_count);
  ctx.status.erase("nextProbeTime");
  if (d.action == commgate::Action::kDeny) {
    ctx.set_phase(phase::kRejected);
    ctx.status["admittedNodes"] = 0;
    ctx.condition(condition::kAdmitted, kFalse, d.reason, d.message);
    sync_status(ctx);
    return Action::await_change();
  }
  ctx.condition(condition::kAdmitted, kTrue, d.reason, d.message);
  return launch_and_sync(ctx, record);
}

// ----- workload and status ----------------------------------------------------------------

ReconcileResult TrainingJobReconciler::launch_and_sync(Context& ctx, const DecisionRecord& record) {
  ctx.status["admittedNodes"] = record.admitted_nodes;
  const char* decided = decision_phase(record.action);
  if (ctx.job.spec.suspend) {
    ctx.set_phase(decided);
    ctx.condition(condition::kRunning, kFalse, "Suspended",
                  "spec.suspend is true: the training workload is not started");
    sync_status(ctx);
    return Action::await_change();
  }
  const bool ours = ensure_workload(ctx, record);
  sync_status(ctx);
  if (!ours) return Action::requeue_after(settings_.probe_poll);
  return Action::await_change();
}

bool TrainingJobReconciler::ensure_workload(Context& ctx, const DecisionRecord& record) {
  enter(ctx, Step::kWorkload);
  const std::string path = jobs_collection(ctx.ns) + "/" + ctx.name;
  std::optional<json> workload = get_or_null(reader_, path);
  const std::string phase_now = ctx.status.value("phase", "");
  if (!workload && (phase_now == phase::kSucceeded || phase_now == phase::kFailed)) {
    // The training ran to its end and its Job is gone (ttlSecondsAfterFinished, or deleted
    // by hand): the job is over, it is not started again.
    return true;
  }
  if (!workload) {
    std::map<std::string, std::string> nccl;
    PoolDevice device = PoolDevice::kUnknown;
    const CommProfile* profile = ctx.overlay ? &*ctx.overlay : ctx.snapshot->profile(ctx.pool());
    if (profile) {
      nccl = nccl_env_of(profile->status);
      device = pool_device_of(profile->status);
    }
    const WorkloadObjects objects =
        build_workload(ctx.job, meta_string(ctx.object, "uid"), nccl, settings_.workload, device);
    if (const auto replaced = replaced_template_env(ctx.job); !replaced.empty()) {
      std::string names;
      for (const std::string& r : replaced) names += (names.empty() ? "" : ", ") + r;
      event(ctx, "Warning", "TemplateEnvReplaced", "Launch",
            "the pod template sets " + names +
                ", which commgate sets for torchrun from the admitted node count; the "
                "template's values are replaced");
    }
    create_if_absent(writer_, services_collection(ctx.ns), objects.service);
    if (create_if_absent(writer_, jobs_collection(ctx.ns), objects.job)) {
      event(ctx, "Normal", op_reason::kWorkloadCreated, "Launch",
            "created Job " + ctx.ns + "/" + ctx.name + " with " +
                format_nodes(ctx.job.spec.num_nodes) + " x " +
                std::to_string(ctx.job.spec.num_proc_per_node) + " processes");
    }
    workload = objects.job;  // as created; its status arrives with the next change
  }
  if (const std::string owner = controller_uid_of(*workload);
      !owner.empty() && owner != meta_string(ctx.object, "uid")) {
    // The Job of an earlier TrainingJob of the same name, not yet garbage-collected.
    ctx.set_phase(decision_phase(record.action));
    ctx.condition(condition::kRunning, kFalse, op_reason::kPreviousWorkloadExists,
                  "Job " + ctx.ns + "/" + ctx.name +
                      " belongs to an earlier TrainingJob of this name; waiting for it to be "
                      "deleted");
    return false;
  }
  const WorkloadState state = workload_state(*workload, pods_of(*workload, ctx.ns));
  if (state.reason == op_reason::kPodsUnschedulable) {
    // Once per episode: when the Running condition does not say it yet.
    const json conditions = ctx.status.value("conditions", json::array());
    const json* running = find_condition(conditions, condition::kRunning);
    if (!running || running->value("reason", "") != op_reason::kPodsUnschedulable)
      event(ctx, "Warning", op_reason::kPodsUnschedulable, "Launch", state.message);
  }
  const std::string detail =
      "Job " + ctx.ns + "/" + ctx.name + ": " + std::to_string(state.active) + " active, " +
      std::to_string(state.succeeded) + " succeeded, " + std::to_string(state.failed) + " failed" +
      (state.message.empty() ? "" : ": " + state.message);
  auto reason_or = [&](const char* fallback) {
    return state.reason.empty() ? std::string(fallback) : state.reason;
  };
  switch (state.phase) {
    case WorkloadPhase::kPending:
      ctx.set_phase(decision_phase(record.action));
      ctx.condition(condition::kRunning, kFalse, reason_or("Pending"), detail);
      break;
    case WorkloadPhase::kRunning:
      ctx.set_phase(phase::kRunning);
      ctx.condition(condition::kRunning, kTrue, reason_or("Running"), detail);
      break;
    case WorkloadPhase::kSucceeded:
      ctx.set_phase(phase::kSucceeded);
      ctx.condition(condition::kRunning, kFalse, reason_or("Completed"), detail);
      ctx.condition(condition::kComplete, kTrue, reason_or("Completed"), detail);
      break;
    case WorkloadPhase::kFailed:
      ctx.set_phase(phase::kFailed);
      ctx.condition(condition::kRunning, kFalse, reason_or("Failed"), detail);
      ctx.condition(condition::kFailed, kTrue, reason_or("Failed"), detail);
      break;
  }
  return true;
}

void TrainingJobReconciler::sync_status(Context& ctx) {
  enter(ctx, Step::kStatus);
  ctx.status["observedGeneration"] = generation_of(ctx.object);
  if (ctx.status.contains("conditions") && ctx.status["conditions"].empty())
    ctx.status.erase("conditions");
  const json& current = ctx.object.value("status", json::object());
  if (ctx.status == current) return;  // nothing changed: no write
  json object = ctx.object;
  object["status"] = ctx.status;
  try {
    ctx.object = status_writer_.update_status(ctx.path, object);
  } catch (const ApiError& e) {
    if (e.not_found()) throw JobGone{};
    throw;  // 409: the runner retries, and the next reconcile reads the job again
  }
  remember_write(ctx);
  {
    std::lock_guard lock(metrics_mu_);
    ++metrics_.status_writes;
  }
  if (ctx.to_count) {
    const Decision d = *std::exchange(ctx.to_count, std::nullopt);
    count_decision(ctx, d, d.policy_name);
  }
}

void TrainingJobReconciler::count_decision(Context& ctx, const Decision& d,
                                           const std::string& policy) {
  // The built-in default policy has no object to count on; a CommPolicy named "default"
  // does, and is counted.
  try {
    counters_.count(policy, d, ctx.now);
  } catch (const std::exception&) {
    // An audit counter is not worth failing the job's reconcile for (the status is
    // written, so a retry would not count it either): counted as an error of the step.
    std::lock_guard lock(metrics_mu_);
    ++metrics_.errors["count"];
  }
}

// ----- metrics --------------------------------------------------------------------------

std::string TrainingJobReconciler::metrics_text() const {
  Metrics m;
  {
    std::lock_guard lock(metrics_mu_);
    m = metrics_;
  }
  std::string out;
  auto family = [&](const char* name, const char* help, const char* label,
                    const std::map<std::string, uint64_t>& values) {
    out += std::string("# HELP ") + name + " " + prometheus_escape_help(help) + "\n";
    out += std::string("# TYPE ") + name + " counter\n";
    for (const auto& [value, n] : values) {
      out += std::string(name) + "{" + label + "=\"" + prometheus_escape_label(value) + "\"} " +
             prometheus_number(static_cast<double>(n)) + "\n";
    }
  };
  family("commgate_operator_reconciles_total", "Reconcile steps run, by step.", "step",
         m.reconciles);
  family("commgate_operator_reconcile_errors_total",
         "Reconciles that ended in an error, by the step that failed.", "step", m.errors);
  family("commgate_operator_decisions_total", "Decisions written on TrainingJobs, by action.",
         "action", m.decisions);
  family("commgate_operator_probe_failures_total", "Probe attempts that failed, by reason.",
         "reason", m.probe_failures);
  append_prometheus_sample(out, "commgate_operator_probes_created_total", "counter",
                           "Probe Jobs created.", static_cast<double>(m.probes_created));
  append_prometheus_sample(out, "commgate_operator_status_writes_total", "counter",
                           "TrainingJob status writes (a status that did not change is not "
                           "written).",
                           static_cast<double>(m.status_writes));
  out +=
      "# HELP commgate_operator_probe_duration_seconds From a probe Job's creation to its "
      "result recorded in the CommProfile.\n";
  out += "# TYPE commgate_operator_probe_duration_seconds summary\n";
  out +=
      "commgate_operator_probe_duration_seconds_sum " + prometheus_number(m.probe_seconds) + "\n";
  out += "commgate_operator_probe_duration_seconds_count " +
         prometheus_number(static_cast<double>(m.probe_durations)) + "\n";
  return out;
}

}  // namespace commgate::op
