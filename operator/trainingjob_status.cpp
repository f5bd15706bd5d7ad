#include "operator/trainingjob_status.h"

#include "core/decision_record.h"

namespace commgate::op {

using nlohmann::json;

namespace {

// `key` of `status` when it has that JSON type, else nullptr.
const json* typed_field(const json& status, const char* key, json::value_t type) {
  const auto it = status.find(key);
  if (it == status.end()) return nullptr;
  const bool matches = it->type() == type || (type == json::value_t::number_integer &&
                                              it->type() == json::value_t::number_unsigned);
  return matches ? &*it : nullptr;
}

}  // namespace

TrainingJobStatus TrainingJobStatus::from_json(const json& status) {
  TrainingJobStatus s;
  if (!status.is_object()) return s;
  if (const json* v = typed_field(status, "phase", json::value_t::string))
    s.phase = v->get<std::string>();
  if (const json* v = typed_field(status, "observedGeneration", json::value_t::number_integer))
    s.observed_generation = v->get<int64_t>();
  if (const json* v = typed_field(status, "workloadUID", json::value_t::string))
    s.workload_uid = v->get<std::string>();
  if (const json* v = typed_field(status, "admittedNodes", json::value_t::number_integer))
    s.admitted_nodes = v->get<int64_t>();
  if (const json* v = typed_field(status, "conditions", json::value_t::array))
    s.conditions = Conditions::from_json(*v);
  if (const json* v = typed_field(status, "decision", json::value_t::object)) s.decision = *v;
  if (const json* v = typed_field(status, "measurement", json::value_t::object)) s.measurement = *v;
  return s;
}

json TrainingJobStatus::to_json() const {
  json out = json::object();
  if (!phase.empty()) out["phase"] = phase;
  if (observed_generation) out["observedGeneration"] = *observed_generation;
  if (!workload_uid.empty()) out["workloadUID"] = workload_uid;
  if (admitted_nodes) out["admittedNodes"] = *admitted_nodes;
  if (!conditions.empty()) out["conditions"] = conditions.to_json();
  if (decision) out["decision"] = *decision;
  if (measurement) out["measurement"] = *measurement;
  return out;
}

bool TrainingJobStatus::workload_created() const {
  const StoredCondition* running = conditions.find(condition::kRunning);
  return commgate::workload_created(phase, running ? running->reason : std::string());
}

std::string TrainingJobStatus::decision_message(const std::string& fallback) const {
  if (!decision) return fallback;
  const auto it = decision->find("message");
  return it != decision->end() && it->is_string() ? it->get<std::string>() : fallback;
}

}  // namespace commgate::op
