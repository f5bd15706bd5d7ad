#include "operator/kueue_workload.h"

#include "core/json_access.h"
#include "core/object_reader.h"
#include "core/pod_requests.h"
#include "core/pool_nodes.h"

namespace commgate::op::kueue {
namespace {

using P = Presence;

std::optional<OwnerReference> workload_read_owner(const Json& doc, FieldErrors& errors) {
  const Json* meta_json = json_member(doc, "metadata");
  // A metadata that is not an object is reported once, by read_document.
  if (!meta_json || !meta_json->is_object()) return std::nullopt;
  ObjectReader meta(meta_json, "metadata", errors);
  std::optional<OwnerReference> owner;
  for (auto& ref : meta.object_list("ownerReferences")) {
    OwnerReference r;
    r.api_version = ref.string("apiVersion", P::kRequired).value_or("");
    r.kind = ref.string("kind", P::kRequired).value_or("");
    r.name = ref.string("name", P::kRequired).value_or("");
    r.uid = ref.string("uid", P::kRequired).value_or("");
    if (ref.boolean("controller", P::kOptional).value_or(false) && !owner) owner = std::move(r);
  }
  return owner;
}

PodSet workload_read_pod_set(ObjectReader& ps) {
  PodSet out;
  out.name = ps.string("name", P::kOptional).value_or("main");
  out.count = ps.integer("count", P::kOptional, 0).value_or(1);
  auto tmpl = ps.object("template", P::kRequired);
  auto meta = tmpl.object("metadata");
  out.labels = meta.string_map("labels", P::kOptional).value_or(out.labels);
  out.annotations = meta.string_map("annotations", P::kOptional).value_or(out.annotations);
  auto spec = tmpl.object("spec");
  out.node_selector = spec.string_map("nodeSelector", P::kOptional).value_or(out.node_selector);
  if (const Json* tolerations = spec.raw("tolerations")) {
    if (tolerations->is_array())
      out.tolerations = *tolerations;
    else
      spec.errors().add(spec.path_of("tolerations"),
                        "must be a list, got " + describe_json(*tolerations));
  }
  if (const Json* pod_spec = tmpl.raw("spec"); pod_spec && pod_spec->is_object()) {
    const auto requests = pod_requests(*pod_spec);
    if (auto it = requests.find(kNvidiaGpu); it != requests.end()) out.gpus_per_pod = it->second;
  }
  return out;
}

void workload_read_conditions(ObjectReader& status, WorkloadConditions& out) {
  for (auto& c : status.object_list("conditions")) {
    const std::string type = c.string("type", P::kRequired).value_or("");
    const bool is_true = c.one_of("status", P::kRequired, {"True", "False", "Unknown"}) == "True";
    if (type == condition::kQuotaReserved) out.quota_reserved = is_true;
    if (type == condition::kAdmitted) out.admitted = is_true;
    if (type == condition::kFinished) out.finished = is_true;
    if (type == condition::kEvicted) out.evicted = is_true;
  }
}

std::optional<Admission> workload_read_admission(ObjectReader& status) {
  auto adm = status.object("admission");
  if (!adm.present()) return std::nullopt;
  Admission out;
  out.cluster_queue = adm.string("clusterQueue", P::kOptional, true).value_or("");
  for (auto& psa : adm.object_list("podSetAssignments")) {
    PodSetAssignment a;
    a.name = psa.string("name", P::kOptional).value_or("main");
    a.flavors = psa.string_map("flavors", P::kOptional).value_or(a.flavors);
    a.count = psa.integer("count", P::kOptional, 0);
    a.topology_assignment = read_topology_assignment(psa, "topologyAssignment");
    a.delayed_topology_request =
        psa.enumeration("delayedTopologyRequest", P::kOptional, kDelayedTopologyStates);
    out.pod_set_assignments.push_back(std::move(a));
  }
  return out;
}

AdmissionCheckState workload_read_check(ObjectReader& c) {
  AdmissionCheckState out;
  out.name = c.string("name", P::kRequired).value_or("");
  out.state = c.enumeration("state", P::kRequired, kCheckStates).value_or(CheckState::kPending);
  out.message = c.string("message", P::kOptional, true).value_or("");
  out.last_transition_time = c.time("lastTransitionTime", P::kOptional);
  out.requeue_after_seconds = c.integer("requeueAfterSeconds", P::kOptional, 0);
  out.retry_count = c.integer("retryCount", P::kOptional, 0);
  if (const Json* updates = c.raw("podSetUpdates")) out.pod_set_updates = *updates;
  return out;
}

}  // namespace

const char* to_string(CheckState state) {
  return name_of(kCheckStates, state);
}

std::string OwnerReference::group() const {
  const size_t slash = api_version.find('/');
  return slash == std::string::npos ? "" : api_version.substr(0, slash);
}

const PodSetAssignment* Admission::find(const std::string& pod_set) const {
  for (const PodSetAssignment& a : pod_set_assignments)
    if (a.name == pod_set) return &a;
  return nullptr;
}

const PodSet* Workload::pod_set(const std::string& name) const {
  for (const PodSet& ps : pod_sets)
    if (ps.name == name) return &ps;
  return nullptr;
}

const AdmissionCheckState* Workload::check(const std::string& name) const {
  for (const AdmissionCheckState& c : admission_checks)
    if (c.name == name) return &c;
  return nullptr;
}

int64_t Workload::admitted_count(const std::string& name) const {
  const PodSet* ps = pod_set(name);
  if (!ps) return 0;
  if (admission)
    if (const PodSetAssignment* a = admission->find(name); a && a->count) return *a->count;
  return ps->count;
}

Workload read_workload(const nlohmann::json& doc) {
  if (doc.is_object()) {
    const Json* version = json_member(doc, "apiVersion");
    if (!version || *version != kApiVersion) {
      FieldErrors only;
      only.add("apiVersion", std::string("commgate reads ") + kApiVersion +
                                 " Workloads only (served by Kueue v0.16 and later), got " +
                                 (version ? describe_json(*version) : "none"));
      throw UnsupportedWorkloadVersion("unsupported Workload", only);
    }
  }
  FieldErrors errors;
  Document d = read_document(doc, kApiVersion, kWorkloadKind, errors);
  Workload wl;
  wl.metadata = std::move(d.metadata);
  wl.owner = workload_read_owner(doc, errors);

  auto spec = d.root.object("spec", P::kRequired);
  wl.active = spec.boolean("active", P::kOptional).value_or(true);
  for (auto& ps : spec.object_list("podSets", P::kRequired))
    wl.pod_sets.push_back(workload_read_pod_set(ps));

  auto status = d.root.object("status");
  workload_read_conditions(status, wl.conditions);
  wl.admission = workload_read_admission(status);
  for (auto& c : status.object_list("admissionChecks"))
    wl.admission_checks.push_back(workload_read_check(c));

  errors.throw_if_any("invalid Workload");
  return wl;
}

}  // namespace commgate::op::kueue
