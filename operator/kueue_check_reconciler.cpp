#include "operator/kueue_check_reconciler.h"

#include <algorithm>
#include <utility>

#include "core/comm_profile.h"
#include "core/field_errors.h"
#include "core/job_decision.h"
#include "core/policy_selection.h"
#include "kube/api_error.h"
#include "operator/conditions.h"
#include "operator/decision_status.h"
#include "operator/kueue_model_annotations.h"
#include "operator/kueue_should_act.h"
#include "operator/kueue_training_shape.h"
#include "operator/measurement_reconciler.h"
#include "operator/object_fields.h"
#include "operator/object_paths.h"
#include "operator/probe_history.h"
#include "operator/probe_retry.h"

namespace commgate::op::kueue {

using nlohmann::json;

namespace {

constexpr const char* kWorkloadsGroupVersion = "/apis/kueue.x-k8s.io/v1beta2/namespaces/";
// The reason of the Event on a Workload whose entry changed state (Kueue's own check
// controllers write the same words in the note).
constexpr const char* kCheckEventReason = "AdmissionCheckUpdated";
// How soon a Workload waiting for its pool's measurement is looked at again.
constexpr std::chrono::seconds kCheckPendingPoll{5};
// How soon a Workload whose job's annotations do not parse is read again: the owner jobs
// are not watched (a get per reconcile), so a researcher's `kubectl annotate` that fixes
// them is seen within this.
constexpr std::chrono::seconds kCheckBadAnnotationsPoll{15};

// "metadata.annotations[commgate.io/parameters]: ...; spec.podSets[1]...": every error on
// one line, as a check message is.
std::string check_errors_text(const FieldErrors& errors) {
  std::string out;
  for (const FieldError& e : errors.all()) out += (out.empty() ? "" : "; ") + e.to_string();
  return out;
}

std::map<std::string, std::string> check_string_map(const json& object) {
  std::map<std::string, std::string> out;
  if (!object.is_object()) return out;
  for (const auto& [k, v] : object.items())
    if (v.is_string()) out[k] = v.get<std::string>();
  return out;
}

// The pool the training's pods go to: the nodeLabels of the ResourceFlavor assigned to its
// GPUs (else to any of its resources), and the pod set's own nodeSelector.
std::map<std::string, std::string> check_pool_selector(const Workload& wl, const PodSet& pod_set,
                                                       const std::map<std::string, json>& flavors) {
  std::map<std::string, std::string> selector = pod_set.node_selector;
  const PodSetAssignment* assignment = wl.admission ? wl.admission->find(pod_set.name) : nullptr;
  if (!assignment || assignment->flavors.empty()) return selector;
  auto flavor = assignment->flavors.find("nvidia.com/gpu");
  if (flavor == assignment->flavors.end()) flavor = assignment->flavors.begin();
  if (auto it = flavors.find(flavor->second); it != flavors.end())
    for (const auto& [k, v] :
         check_string_map(it->second.value(json::json_pointer("/spec/nodeLabels"), json())))
      selector.emplace(k, v);
  return selector;
}

// The largest nvidia.com/gpu allocatable among the snapshot's Nodes that `selector`
// matches (0: none known).
int64_t check_gpus_per_node(const Snapshot& snapshot,
                            const std::map<std::string, std::string>& selector) {
  if (!snapshot.nodes) return 0;
  double most = 0;
  for (const PoolNode& node : *snapshot.nodes) {
    const bool matches = std::all_of(selector.begin(), selector.end(), [&](const auto& kv) {
      auto it = node.labels.find(kv.first);
      return it != node.labels.end() && it->second == kv.second;
    });
    if (!matches) continue;
    if (auto it = node.accelerators.find("nvidia.com/gpu"); it != node.accelerators.end())
      most = std::max(most, it->second);
  }
  return static_cast<int64_t>(most);
}

// " (nodeSelector {gpu-pool=a100})": which nodes a pool's hashed name stands for, from its
// CommProfile's spec.
std::string check_pool_selector_text(const json& profile) {
  const auto selector =
      check_string_map(profile.value(json::json_pointer("/spec/nodeSelector"), json()));
  std::vector<std::string> hosts;
  const json listed = profile.value(json::json_pointer("/spec/hostnames"), json::array());
  if (listed.is_array())
    for (const json& h : listed)
      if (h.is_string()) hosts.push_back(h.get<std::string>());
  return selector.empty() && hosts.empty() ? "" : " (" + format_pool(selector, hosts) + ")";
}

// When Kueue last reserved the Workload's quota: its QuotaReserved condition's
// lastTransitionTime while True (nullopt otherwise).
std::optional<TimePoint> check_quota_reserved_at(const json& object) {
  const json conditions = object.value(json::json_pointer("/status/conditions"), json::array());
  const json* reserved = find_condition(conditions, "QuotaReserved");
  if (!reserved || reserved->value("status", "") != kTrue) return std::nullopt;
  return parse_rfc3339(reserved->value("lastTransitionTime", ""));
}

// What one reconcile reads before it decides: the Workload, our checks, and what the
// request is made of.
struct CheckInputs {
  json object;
  Workload workload;
  std::map<std::string, AdmissionCheck> our_checks;
  std::optional<json> owner_job;
  std::map<std::string, json> flavors;
};

std::map<std::string, AdmissionCheck> check_ours(const kube::Reader& reader, const Logger& log) {
  std::map<std::string, AdmissionCheck> out;
  for (const json& doc : reader.list(kAdmissionChecks).items) {
    try {
      AdmissionCheck check = read_admission_check(doc);
      if (check.is_ours()) out.emplace(check.metadata.name, std::move(check));
    } catch (const ValidationError& e) {
      log.debug(std::string("AdmissionCheck not read: ") + e.what());
    }
  }
  return out;
}

std::set<std::string> check_names(const std::map<std::string, AdmissionCheck>& checks) {
  std::set<std::string> names;
  for (const auto& [name, check] : checks) names.insert(name);
  return names;
}

// The CommPolicy the check `name` holds Workloads to ("" for the namespace's).
std::string check_policy_ref(const std::map<std::string, AdmissionCheck>& checks,
                             const std::string& name) {
  auto it = checks.find(name);
  if (it == checks.end() || !it->second.parameters) return "";
  return it->second.parameters->name;
}

// The ResourceFlavors assigned to the Workload's pod sets: their nodeLabels are its pool.
void check_read_flavors(const kube::Reader& reader, CheckInputs& in) {
  if (!in.workload.admission) return;
  for (const PodSetAssignment& a : in.workload.admission->pod_set_assignments)
    for (const auto& [resource, flavor] : a.flavors)
      if (!in.flavors.contains(flavor))
        if (auto doc = detail::get_or_null(reader, std::string(kResourceFlavors) + "/" + flavor))
          in.flavors.emplace(flavor, std::move(*doc));
}

// The owner job and the flavors the Workload's request is read from.
void check_read_request_inputs(const kube::Reader& reader, CheckInputs& in) {
  const Workload& wl = in.workload;
  if (wl.owner)
    if (auto path = owner_job_path(wl.metadata.namespace_, *wl.owner))
      in.owner_job = detail::get_or_null(reader, *path);
  check_read_flavors(reader, in);
}

// The pool of `wl`'s first training pod set, before its request is known (the node size
// depends on it).
std::map<std::string, std::string> check_first_pool(const Workload& wl,
                                                    const std::map<std::string, json>& flavors) {
  try {
    const TrainingShape shape = training_shape(wl, 0);
    if (const PodSet* ps = shape.pod_sets.empty() ? nullptr : wl.pod_set(shape.pod_sets.front()))
      return check_pool_selector(wl, *ps, flavors);
  } catch (const ValidationError&) {
  }
  return {};
}

// The hosts topology-aware scheduling assigned to `wl`'s training (empty: none, or a
// delayed topology), as workload_request puts them in the request's pool (pool_name reads
// them in any order).
std::vector<std::string> check_hostnames(const Workload& wl) {
  try {
    return training_shape(wl, 0).hostnames;
  } catch (const ValidationError&) {
    return {};
  }
}

// The recorded answer to `request` (kRequest) under the policy that governs it now, while
// the measurement it came from would still be fresh; nullopt otherwise.
std::optional<CheckOutcome> check_held_record(const CheckDecisionRecords& records,
                                              const WorkloadRequest& request,
                                              const Snapshot& snapshot, TimePoint now) {
  const auto policy = select_policy(request.job, snapshot, nullptr);
  if (!policy) return std::nullopt;
  return records.find(
      request.record_key, policy_record_version(*policy),
      now - std::chrono::duration_cast<TimePoint::duration>(policy->spec.measurement_ttl));
}

WorkloadRequest check_request(const CheckInputs& in, const std::string& check,
                              const Snapshot& snapshot) {
  const int64_t gpus = check_gpus_per_node(snapshot, check_first_pool(in.workload, in.flavors));
  return workload_request(in.workload, in.owner_job ? &*in.owner_job : nullptr, in.flavors,
                          check_policy_ref(in.our_checks, check), gpus,
                          snapshot.commgate_annotations_of(in.workload.metadata.namespace_));
}

}  // namespace

std::string workload_path(const std::string& ns, const std::string& name) {
  return std::string(kWorkloadsGroupVersion) + ns + "/workloads/" + name;
}

std::optional<std::string> owner_job_path(const std::string& ns, const OwnerReference& owner) {
  const auto kind = job_kind_of(owner);
  if (!kind || owner.name.empty()) return std::nullopt;
  const char* plural = "jobs";
  switch (*kind) {
    case JobKind::kPyTorchJob:
      plural = "pytorchjobs";
      break;
    case JobKind::kTrainJob:
      plural = "trainjobs";
      break;
    case JobKind::kJobSet:
      plural = "jobsets";
      break;
    case JobKind::kJob:
      plural = "jobs";
      break;
  }
  const std::string base = owner.group().empty() ? "/api/" : "/apis/";
  return base + owner.api_version + "/namespaces/" + ns + "/" + plural + "/" + owner.name;
}

WorkloadRequest workload_request(const Workload& wl, const json* owner_job,
                                 const std::map<std::string, json>& flavors,
                                 const std::string& policy_ref, int64_t gpus_per_node,
                                 const std::map<std::string, std::string>& namespace_defaults) {
  WorkloadRequest out;
  TrainingShape shape;
  try {
    shape = training_shape(wl, gpus_per_node);
  } catch (const ValidationError& e) {
    out.message = check_errors_text(e.errors());
    return out;
  }
  if (owner_job == nullptr) {
    out.message = "metadata.ownerReferences: the job that owns the workload (" +
                  (wl.owner ? wl.owner->kind + " " + wl.owner->name : std::string("none")) +
                  ") is not found";
    return out;
  }
  const ModelFromAnnotations model = model_from_annotations(
      check_string_map(owner_job->value(json::json_pointer("/metadata/annotations"), json())),
      namespace_defaults, wl.metadata.namespace_);
  if (model.kind == ModelFromAnnotations::Kind::kInvalid) {
    out.message = check_errors_text(model.errors);
    return out;
  }
  TrainingJob& job = out.job;
  job.metadata = wl.metadata;
  job.spec.policy_ref = policy_ref;
  if (model.kind == ModelFromAnnotations::Kind::kNone) {
    out.kind = WorkloadRequest::Kind::kNoModel;
    return out;
  }
  const PodSet& first = *wl.pod_set(shape.pod_sets.front());
  // One all-reduce ring, one pool: pod sets on different pools (other flavors, other
  // nodeSelectors) would be decided by the first one's measurement alone (the attacker
  // review of 2026-12-07: a Master on a measured fast rack and Workers on a slow one were
  // Ready at the fast rack's numbers).
  const std::map<std::string, std::string> pool = check_pool_selector(wl, first, flavors);
  for (const std::string& name : shape.pod_sets) {
    const PodSet* ps = wl.pod_set(name);
    if (!ps || wl.admitted_count(name) == 0) continue;
    if (const auto other = check_pool_selector(wl, *ps, flavors); other != pool) {
      out.kind = WorkloadRequest::Kind::kMixedPools;
      out.message = "commgate rejected this job: its training pod sets run on different pools (" +
                    first.name + " on nodeSelector " + format_node_selector(pool) + ", " + name +
                    " on " + format_node_selector(other) +
                    ", their ResourceFlavor's nodeLabels and their own nodeSelector), and "
                    "commgate measures one pool for a job's all-reduce: it cannot check this "
                    "one. Kueue has deactivated this workload: delete the job and create it "
                    "with one nodeSelector for every replica, queued where one ResourceFlavor "
                    "serves them all.";
      return out;
    }
  }
  job.spec.num_nodes = static_cast<int>(std::clamp<int64_t>(shape.nodes, 1, kMaxNodes));
  job.spec.min_nodes = job.spec.num_nodes;  // a Workload is admitted at its count or not
  job.spec.min_nodes_field = "the Workload's node count";
  job.spec.procs_per_node_field = "the pods' nvidia.com/gpu";
  job.spec.node_selector_field =
      "the pod template's nodeSelector and the ResourceFlavor's nodeLabels";
  job.spec.tolerations_field = "the pod template's tolerations";
  job.spec.step_time_hint_field = "";  // no annotation gives one
  job.spec.resizable = false;
  job.spec.num_proc_per_node = static_cast<int>(std::max<int64_t>(1, shape.procs_per_node));
  job.spec.suspend = true;
  job.spec.node_selector = pool;
  // Topology-aware scheduling chose the hosts: the pool is those hosts (measured on them,
  // not on the flavor's other nodes). Sorted: the pool's name does not depend on the order.
  job.spec.hostnames = shape.hostnames;
  std::sort(job.spec.hostnames.begin(), job.spec.hostnames.end());
  job.spec.tolerations = first.tolerations.is_array() ? first.tolerations : json::array();
  if (shape.gpus_per_pod > 0)
    job.spec.template_accelerators["nvidia.com/gpu"] =
        static_cast<double>(shape.gpus_per_pod * std::max<int64_t>(1, shape.pods_per_node));
  job.spec.model = model.model;
  // The decision record answers this request again only for the same job, counts, pool
  // (hosts included), processes, GPUs and model (the attacker review of 2026-12-07: a
  // Workload requeued onto another flavor or other hosts, or re-created for a job edited
  // while suspended, got the first answer). Names and quantities here are DNS names and
  // numbers: none holds the separator.
  out.record_key = detail::meta_string(*owner_job, "uid");
  for (size_t i = 0; i < shape.pod_sets.size(); ++i)
    out.record_key += (i == 0 ? "|" : ",") + shape.pod_sets[i] + "=" +
                      std::to_string(wl.admitted_count(shape.pod_sets[i]));
  // Two checks of ours holding the Workload to two policies decide apart.
  out.record_key += "|policy=" + policy_ref;
  out.record_key += "|pool=" + pool_name(job.spec.node_selector, job.spec.hostnames) +
                    "|procs=" + std::to_string(job.spec.num_proc_per_node) +
                    "|gpus=" + std::to_string(shape.gpus_per_pod) +
                    "|model=" + probe_model_annotation(job.spec.model) + "|" +
                    job.spec.model.torch_script;
  for (int64_t d : job.spec.model.input_shape) out.record_key += "," + std::to_string(d);
  out.kind = WorkloadRequest::Kind::kRequest;
  return out;
}

CheckOutcome check_outcome(const JobDecision& jd, const json* profile, TimePoint now) {
  using Kind = CheckOutcome::Kind;
  if (!jd.policy)
    return {.kind = Kind::kProbePending,
            .message = "no CommPolicy to check the workload against: " + jd.policy_error};
  const Decision& d = jd.decision;
  switch (d.action) {
    case commgate::Action::kAdmit:
    case commgate::Action::kWarn:
      return {.kind = Kind::kWithinPolicy, .message = d.message};
    case commgate::Action::kDownsize:
    case commgate::Action::kDeny:
      return {.kind = Kind::kOverPolicy,
              .message = d.message,
              .largest_passing_nodes = d.largest_passing_nodes};
    case commgate::Action::kGate:
      break;
  }
  if (!is_measurement_gate(d.reason)) return {.kind = Kind::kProbePending, .message = d.message};
  if (profile == nullptr)
    return {.kind = Kind::kProbePending, .message = d.message, .pool = jd.profile_name};
  const json conditions = profile->value(json::json_pointer("/status/conditions"), json::array());
  const json* probing = find_condition(conditions, kProbingCondition);
  const std::string probing_message = probing ? probing->value("message", "") : "";
  if (probing && probing->value("status", "") == kTrue)
    return {.kind = Kind::kProbePending,
            .message = "waiting for the measurement of pool " + jd.profile_name +
                       check_pool_selector_text(*profile) + ": " + probing_message,
            .pool = jd.profile_name};
  const ProbeHistory history = probe_history_of(*profile);
  const int attempts = jd.policy->spec.retry_strategy.backoff_limit_count + 1;
  const bool exhausted = history.failed_attempts >= attempts;
  if (history.failed_attempts > 0 &&
      (exhausted || (history.next_probe_time && *history.next_probe_time > now))) {
    const auto wait = exhausted
                          ? std::chrono::seconds(jd.policy->spec.retry_strategy.backoff_max_seconds)
                          : std::chrono::ceil<std::chrono::seconds>(*history.next_probe_time - now);
    return {.kind = Kind::kProbeFailed,
            .message =
                "the probe of pool " + jd.profile_name + " failed: " + history.last_failure_message,
            .retry_after = std::max(wait, std::chrono::seconds(1))};
  }
  // The pool's own state after the decision's words, as a sentence of its own (a trial read
  // "...{pool=a}) pool pool-1 measured on 2 nodes" as one run-on).
  return {.kind = Kind::kProbePending,
          .message = d.message +
                     (probing_message.empty() ? "" : ". The pool's last probe: " + probing_message),
          .pool = jd.profile_name};
}

std::string policy_record_version(const CommPolicy& policy) {
  return policy.metadata.name + "/" + policy.metadata.uid + "/" + policy.metadata.resource_version;
}

CheckOutcome no_model_outcome(const std::optional<CommPolicy>& policy,
                              const std::string& policy_error) {
  using Kind = CheckOutcome::Kind;
  if (!policy)
    return {.kind = Kind::kProbePending,
            .message = "no CommPolicy to check the workload against: " + policy_error};
  // Under the workload gate a queued multi-node job passes only naming its model (its own
  // annotation, or its Namespace's as the gate saw it): one that names none by now (the
  // Namespace's default removed since) is not let through unmeasured (the attacker review
  // of 2026-12-07).
  const bool gated = policy->spec.unmanaged_workloads == UnmanagedWorkloads::kDeny;
  if (policy->spec.admission_check.without_model == WithoutModelAction::kReady && !gated)
    return {.kind = Kind::kNoModel, .message = ""};
  const std::string why = gated ? " gates every multi-node workload (spec.unmanagedWorkloads: "
                                  "deny), so none runs unmeasured"
                                : " asks every job it checks to name one "
                                  "(spec.admissionCheck.withoutModel: Rejected)";
  return {.kind = Kind::kNoModelRejected,
          .message = "commgate rejected this job: it names no model, and " +
                     policy_label(policy->metadata.name) + why +
                     ". Annotate the job with commgate.io/parameters (the gradient element "
                     "count, e.g. 350M) and optionally commgate.io/gradient-dtype, "
                     "commgate.io/batch-size and commgate.io/optimizer, then submit it again: "
                     "Kueue has deactivated this workload, so delete the job and create it "
                     "with the annotations."};
}

PendingBound pending_bound(const CommPolicy& policy, const AdmissionCheckState& current) {
  return {
      .max_pending = std::chrono::seconds(policy.spec.admission_check.max_pending_seconds),
      .retry_after = probe_retry_delay(policy.spec.retry_strategy,
                                       static_cast<int>(current.retry_count.value_or(0)) + 1),
      .set_by = "spec.admissionCheck.maxPendingSeconds of " + policy_label(policy.metadata.name)};
}

namespace {

// The Workload `object` and our checks, read through `reader`, when the check acts on it
// (should_act: the entries of ours it acts on in `checks`); nullopt otherwise, or when it
// does not read as a Workload. What the measurement demand and the pool index both ask.
std::optional<CheckInputs> check_acting_inputs(const kube::Reader& reader, const json& object,
                                               std::vector<std::string>& checks) {
  CheckInputs in;
  try {
    in.workload = read_workload(object);
  } catch (const ValidationError&) {
    return std::nullopt;
  }
  in.our_checks = check_ours(reader, Logger::discard());
  ActDecision act = should_act(in.workload, check_names(in.our_checks));
  if (!act.act) return std::nullopt;
  checks = std::move(act.checks);
  return in;
}

}  // namespace

std::optional<MeasurementDemand> workload_measurement_demand(const kube::Reader& reader,
                                                             const CheckDecisionRecords& records,
                                                             const std::string& key,
                                                             const Snapshot& snapshot,
                                                             TimePoint now) {
  if (!is_workload_demand(key)) return std::nullopt;
  const auto name = detail::parse_key(workload_key_of_demand(key));
  if (!name) return std::nullopt;
  const auto object = detail::get_or_null(reader, workload_path(name->ns, name->name));
  if (!object) return std::nullopt;
  std::vector<std::string> checks;
  auto in = check_acting_inputs(reader, *object, checks);
  if (!in) return std::nullopt;
  check_read_request_inputs(reader, *in);
  const WorkloadRequest request = check_request(*in, checks.front(), snapshot);
  if (request.kind != WorkloadRequest::Kind::kRequest ||
      check_held_record(records, request, snapshot, now))
    return std::nullopt;
  return request_measurement_demand(key, request.job, snapshot, now);
}

std::optional<std::string> workload_waiting_pool(const kube::Reader& reader, const json& object) {
  std::vector<std::string> checks;
  auto in = check_acting_inputs(reader, object, checks);
  if (!in) return std::nullopt;
  check_read_flavors(reader, *in);
  return pool_name(check_first_pool(in->workload, in->flavors), check_hostnames(in->workload));
}

struct KueueCheckReconciler::Context {
  std::string key;
  TimePoint now{};
  Logger log = Logger::discard();
  std::shared_ptr<const Snapshot> snapshot;
  CheckInputs in;
  std::string check;  // the entry being decided
  // The least time left to a bounded Pending wait among the entries decided (nullopt: none).
  std::optional<std::chrono::nanoseconds> wait_left;
};

KueueCheckReconciler::KueueCheckReconciler(
    const kube::Reader& reader, kube::StatusWriter& status_writer, CheckDecisionRecords& records,
    std::function<std::shared_ptr<const Snapshot>()> snapshot, kube::EventRecorder& events,
    std::function<TimePoint()> now, CheckReconcilerSettings settings)
    : reader_(reader),
      status_writer_(status_writer),
      snapshot_(std::move(snapshot)),
      events_(events),
      now_(std::move(now)),
      settings_(std::move(settings)),
      records_(records) {}

kube::ReconcileResult KueueCheckReconciler::reconcile(const std::string& key) {
  Context ctx;
  ctx.key = key;
  ctx.now = now_();
  ctx.log = settings_.log.with({{"workload", key}});
  try {
    // read
    const auto name = detail::parse_key(key);
    if (!name) return kube::Action::await_change();
    const auto object = detail::get_or_null(reader_, workload_path(name->ns, name->name));
    if (!object) return kube::Action::await_change();
    ctx.in.object = *object;
    try {
      ctx.in.workload = read_workload(*object);
    } catch (const UnsupportedWorkloadVersion& e) {
      ctx.log.info(std::string("ignored: ") + e.errors().to_string());
      return kube::Action::await_change();
    } catch (const ValidationError& e) {
      ctx.log.warning(std::string("not read: ") + check_errors_text(e.errors()));
      return kube::Action::await_change();
    }
    ctx.snapshot = snapshot_();
    if (!ctx.snapshot)
      return kube::ReconcileError::retryable("no snapshot of policies and profiles yet");
    ctx.in.our_checks = check_ours(reader_, ctx.log);
    // guard
    const ActDecision act = should_act(ctx.in.workload, check_names(ctx.in.our_checks));
    if (!act.act) {
      ctx.log.debug("not acting: " + act.reason);
      return kube::Action::await_change();
    }
    check_read_request_inputs(reader_, ctx.in);
    // decide and write, per entry of ours (one, unless the ClusterQueue lists two of ours)
    bool waiting = false, bad_annotations = false;
    for (const std::string& check : act.checks) {
      ctx.check = check;
      const CheckOutcome outcome = decide(ctx);
      waiting = waiting || outcome.kind == CheckOutcome::Kind::kProbePending;
      bad_annotations = bad_annotations || outcome.kind == CheckOutcome::Kind::kBadAnnotations;
      write(ctx, check, outcome);
    }
    // The pool's CommProfile changing will bring the Workload back (the watch is the
    // wiring's); until then a Workload waiting for its pool looks again, and a bounded
    // wait when its bound ends, not up to a poll later.
    if (waiting) {
      kube::Clock::duration again = kCheckPendingPoll;
      if (ctx.wait_left)
        again = std::min(again, kube::Clock::duration(
                                    std::chrono::ceil<std::chrono::milliseconds>(*ctx.wait_left)));
      return kube::Action::requeue_after(again);
    }
    if (bad_annotations) return kube::Action::requeue_after(kCheckBadAnnotationsPoll);
    return kube::Action::await_change();
  } catch (const kube::ApiError& e) {
    if (e.conflict()) return kube::Action::requeue_after(std::chrono::milliseconds(100));
    return kube::ReconcileError::retryable("workload " + key + ": " + e.what());
  } catch (const std::exception& e) {
    return kube::ReconcileError::retryable("workload " + key + ": " + e.what());
  }
}

CheckOutcome KueueCheckReconciler::decide(Context& ctx) {
  std::optional<CommPolicy> policy;
  const CheckOutcome outcome = decide_unbounded(ctx, policy);
  // Kueue has no timeout on Pending: the policy bounds the wait for the probe, counted from
  // when this entry began waiting for it: not before the entry went Pending, the quota was
  // reserved, or the entry was last Pending for something else.
  const std::string wait_key = ctx.in.workload.metadata.uid + "/" + ctx.check;
  const bool probe_wait =
      outcome.kind == CheckOutcome::Kind::kProbePending && !outcome.pool.empty();
  if (!policy || !probe_wait) {
    if (check_state_for(outcome.kind) == CheckState::kPending)
      other_waits_.saw(wait_key, ctx.now);
    else
      other_waits_.forget(wait_key);
    return outcome;
  }
  AdmissionCheckState current;
  if (const AdmissionCheckState* entry = ctx.in.workload.check(ctx.check)) current = *entry;
  std::optional<TimePoint> since =
      pending_wait_since(current, check_quota_reserved_at(ctx.in.object));
  if (const auto other = other_waits_.last_seen(wait_key); since && other)
    since = std::max(*since, *other);
  const BoundedOutcome bounded =
      bound_pending_wait(outcome, since, pending_bound(*policy, current), ctx.now);
  if (bounded.wait_left)
    ctx.wait_left = std::min(ctx.wait_left.value_or(*bounded.wait_left), *bounded.wait_left);
  return bounded.outcome;
}

CheckOutcome KueueCheckReconciler::decide_unbounded(Context& ctx,
                                                    std::optional<CommPolicy>& policy) {
  using Kind = CheckOutcome::Kind;
  const WorkloadRequest request = check_request(ctx.in, ctx.check, *ctx.snapshot);
  switch (request.kind) {
    case WorkloadRequest::Kind::kInvalid:
      return {.kind = Kind::kBadAnnotations,
              .message = "commgate cannot check this workload: " + request.message};
    case WorkloadRequest::Kind::kMixedPools:
      return {.kind = Kind::kCannotCheck, .message = request.message};
    case WorkloadRequest::Kind::kNoModel: {
      // Which policy governs a namespace the cache has not seen is not known (and with it
      // whether a model is required): wait, as decide_for_job does for a TrainingJob.
      const std::string& ns = request.job.metadata.namespace_;
      if (ctx.snapshot->namespaces_listed && !ctx.snapshot->namespace_labels.contains(ns))
        return {.kind = Kind::kProbePending,
                .message = "namespace " + ns +
                           " is not in commgate's cache of Namespaces yet, so which CommPolicy "
                           "governs it is not known; commgate checks the job once it sees the "
                           "namespace"};
      std::string error;
      return no_model_outcome(select_policy(request.job, *ctx.snapshot, &error), error);
    }
    case WorkloadRequest::Kind::kRequest:
      break;
  }
  if (auto held = check_held_record(records_, request, *ctx.snapshot, ctx.now)) return *held;
  const JobDecision jd = decide_for_job(request.job, *ctx.snapshot, Requester{}, ctx.now);
  const auto profile = detail::get_or_null(reader_, detail::profile_path(jd.profile_name));
  const CheckOutcome outcome = check_outcome(jd, profile ? &*profile : nullptr, ctx.now);
  if (!jd.policy) return outcome;
  records_.remember(request.record_key, outcome, policy_record_version(*jd.policy), ctx.now);
  policy = jd.policy;
  return outcome;
}

void KueueCheckReconciler::write(Context& ctx, const std::string& check,
                                 const CheckOutcome& outcome) {
  const Workload& wl = ctx.in.workload;
  AdmissionCheckState current;
  current.name = check;
  if (const AdmissionCheckState* entry = wl.check(check)) current = *entry;
  const AdmissionCheckState next =
      next_check_state(current, outcome, wl.conditions.admitted, ctx.now);
  if (!check_state_changed(current, next)) return;
  kube::PatchOptions options;
  options.field_manager = kFieldManager;
  options.force = true;
  status_writer_.patch_status(workload_path(wl.metadata.namespace_, wl.metadata.name),
                              kube::PatchType::kApply, check_state_apply(wl, current, next),
                              options);
  ctx.log.info("check " + check + ": " + to_string(next.state) + ": " + next.message);
  if (const auto note = check_state_event(current, next)) {
    const bool warning = next.state == CheckState::kRetry || next.state == CheckState::kRejected;
    events_.record(
        {kApiVersion, kWorkloadKind, wl.metadata.namespace_, wl.metadata.name, wl.metadata.uid},
        warning ? "Warning" : "Normal", kCheckEventReason, "Check", *note);
  }
}

void OtherPendingWaits::saw(const std::string& key, TimePoint now) {
  std::lock_guard lock(mu_);
  last_[key] = now;
  while (last_.size() > capacity_) {
    auto oldest = last_.begin();
    for (auto i = last_.begin(); i != last_.end(); ++i)
      if (i->second < oldest->second) oldest = i;
    last_.erase(oldest);
  }
}

std::optional<TimePoint> OtherPendingWaits::last_seen(const std::string& key) const {
  std::lock_guard lock(mu_);
  if (auto it = last_.find(key); it != last_.end()) return it->second;
  return std::nullopt;
}

void OtherPendingWaits::forget(const std::string& key) {
  std::lock_guard lock(mu_);
  last_.erase(key);
}

size_t OtherPendingWaits::size() const {
  std::lock_guard lock(mu_);
  return last_.size();
}

std::optional<CheckOutcome> CheckDecisionRecords::find(const std::string& record_key,
                                                       const std::string& policy_version,
                                                       TimePoint not_before) const {
  std::lock_guard lock(mu_);
  const auto it = records_.find(record_key);
  if (it == records_.end() || it->second.policy_version != policy_version ||
      it->second.decided_at < not_before)
    return std::nullopt;
  return it->second.outcome;
}

void CheckDecisionRecords::remember(const std::string& record_key, const CheckOutcome& outcome,
                                    const std::string& policy_version, TimePoint decided_at) {
  if (outcome.kind != CheckOutcome::Kind::kWithinPolicy &&
      outcome.kind != CheckOutcome::Kind::kOverPolicy)
    return;
  std::lock_guard lock(mu_);
  if (records_.insert_or_assign(record_key, Record{outcome, policy_version, decided_at}).second)
    order_.push_back(record_key);
  while (records_.size() > capacity_ && !order_.empty()) {
    records_.erase(order_.front());
    order_.pop_front();
  }
}

size_t CheckDecisionRecords::size() const {
  std::lock_guard lock(mu_);
  return records_.size();
}

}  // namespace commgate::op::kueue
