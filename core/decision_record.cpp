#include "core/decision_record.h"

#include <charconv>
#include <cstdint>
#include <cstring>
#include <nlohmann/json.hpp>

#include "core/annotations.h"
#include "core/json_write.h"

namespace commgate {
namespace {

using Json = nlohmann::json;

// FNV-1a 64 over a canonical byte stream: every field in a fixed order, strings
// length-prefixed, numbers in a fixed text form, so no two specs share a stream.
class SpecHasher {
 public:
  void bytes(std::string_view s) {
    for (unsigned char c : s) {
      h_ ^= c;
      h_ *= 1099511628211ull;
    }
  }
  void str(std::string_view s) {
    integer(static_cast<int64_t>(s.size()));
    bytes(s);
  }
  void integer(int64_t v) {
    char buf[24];
    const auto end = std::to_chars(buf, buf + sizeof buf, v).ptr;
    bytes(std::string_view(buf, static_cast<size_t>(end - buf)));
    bytes(";");
  }
  void number(double v) {
    // Shortest round-trip form: the same double always gives the same text.
    char buf[32];
    const auto end = std::to_chars(buf, buf + sizeof buf, v).ptr;
    bytes(std::string_view(buf, static_cast<size_t>(end - buf)));
    bytes(";");
  }
  std::string hex() const {
    static const char* kDigits = "0123456789abcdef";
    std::string out(16, '0');
    for (int i = 0; i < 16; ++i) out[15 - i] = kDigits[(h_ >> (4 * i)) & 0xf];
    return out;
  }

 private:
  uint64_t h_ = 14695981039346656037ull;
};

Action action_named(const std::string& s, bool* ok) {
  for (Action a :
       {Action::kAdmit, Action::kDownsize, Action::kDeny, Action::kWarn, Action::kGate}) {
    if (s == to_string(a)) return a;
  }
  *ok = false;
  return Action::kAdmit;
}

std::optional<ObjectRef> ref_from_json(const Json& j) {
  if (!j.is_object() || !j.contains("name") || !j["name"].is_string()) return std::nullopt;
  ObjectRef r;
  r.name = j["name"].get<std::string>();
  if (auto rv = j.find("resourceVersion"); rv != j.end()) {
    if (!rv->is_string()) return std::nullopt;
    r.resource_version = rv->get<std::string>();
  }
  return r;
}

}  // namespace

std::string decision_spec_hash(const TrainingJobSpec& spec) {
  return decision_spec_hash(spec, spec.num_nodes);
}

std::string decision_spec_hash(const TrainingJobSpec& spec, int num_nodes) {
  SpecHasher h;
  h.bytes("commgate-spec-v1;");
  h.integer(num_nodes);
  h.integer(spec.min_nodes);
  h.integer(spec.num_proc_per_node);
  h.integer(static_cast<int64_t>(spec.node_selector.size()));
  for (const auto& [k, v] : spec.node_selector) {
    h.str(k);
    h.str(v);
  }
  h.str(spec.policy_ref);
  const ModelSpec& m = spec.model;
  h.number(m.parameters);
  h.str(m.gradient_dtype);
  h.str(m.torch_script);
  h.integer(static_cast<int64_t>(m.input_shape.size()));
  for (int64_t d : m.input_shape) h.integer(d);
  h.integer(m.batch_size);
  h.str(m.optimizer);
  if (m.step_time_hint_ms) {
    h.bytes("hint;");
    h.number(*m.step_time_hint_ms);
  } else {
    h.bytes("nohint;");
  }
  return h.hex();
}

std::vector<std::pair<std::string, std::string>> decision_annotations(const DecisionRecord& r) {
  return {{annotation::kDecision, to_string(r.action)},
          {annotation::kReason, r.reason},
          {annotation::kRequestedNodes, std::to_string(r.requested_nodes)},
          {annotation::kDecisionRecord, to_annotation(r)}};
}

// Written as nlohmann's dump() of the record's object would write it (keys sorted), without
// building the tree: every /mutate writes one (#9). decision_record_test holds the two
// together.
std::string to_annotation(const DecisionRecord& r) {
  auto write_ref = [](std::string& out, const ObjectRef& ref) {
    out += "{\"name\":";
    append_json_string(out, ref.name);
    if (!ref.resource_version.empty()) {
      out += ",\"resourceVersion\":";
      append_json_string(out, ref.resource_version);
    }
    out += '}';
  };
  std::string out;
  out.reserve(256 + r.message.size());
  out += "{\"action\":";
  append_json_string(out, to_string(r.action));
  out += ",\"admittedNodes\":";
  out += std::to_string(r.admitted_nodes);
  out += ",\"decidedAt\":";
  append_json_string(out, format_rfc3339(r.decided_at));
  if (!r.mac.empty()) {
    out += ",\"mac\":";
    append_json_string(out, r.mac);
  }
  if (!r.message.empty()) {
    out += ",\"message\":";
    append_json_string(out, r.message);
  }
  out += ",\"policy\":";
  write_ref(out, r.policy);
  if (r.profile) {
    out += ",\"profile\":";
    write_ref(out, *r.profile);
  }
  out += ",\"reason\":";
  append_json_string(out, r.reason);
  out += ",\"requestedNodes\":";
  out += std::to_string(r.requested_nodes);
  if (r.requester) {
    out += ",\"requester\":{\"groups\":[";
    for (size_t i = 0; i < r.requester->groups.size(); ++i) {
      if (i) out += ',';
      append_json_string(out, r.requester->groups[i]);
    }
    out += "],\"username\":";
    append_json_string(out, r.requester->username);
    out += '}';
  }
  out += ",\"specHash\":";
  append_json_string(out, r.spec_hash);
  out += '}';
  return out;
}

std::optional<DecisionRecord> parse_decision_record(std::string_view text, std::string* error) {
  auto fail = [&](const std::string& why) -> std::optional<DecisionRecord> {
    if (error) *error = why;
    return std::nullopt;
  };
  const Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return fail("not a JSON object");
  auto str_field = [&](const char* key, std::string* out) {
    auto it = j.find(key);
    if (it == j.end() || !it->is_string()) return false;
    *out = it->get<std::string>();
    return true;
  };
  auto int_field = [&](const char* key, int* out) {
    auto it = j.find(key);
    if (it == j.end() || !it->is_number_integer()) return false;
    const auto v = it->get<int64_t>();
    if (v < 0 || v > kMaxNodes) return false;
    *out = static_cast<int>(v);
    return true;
  };
  DecisionRecord r;
  std::string action, decided_at;
  if (!str_field("action", &action)) return fail("action: missing or not a string");
  bool ok = true;
  r.action = action_named(action, &ok);
  if (!ok) return fail("action: unknown \"" + action + "\"");
  if (!int_field("admittedNodes", &r.admitted_nodes)) return fail("admittedNodes: invalid");
  if (!int_field("requestedNodes", &r.requested_nodes)) return fail("requestedNodes: invalid");
  if (!str_field("reason", &r.reason)) return fail("reason: missing or not a string");
  const auto policy = ref_from_json(j.value("policy", Json()));
  if (!policy) return fail("policy: missing or invalid");
  r.policy = *policy;
  if (j.contains("profile")) {
    r.profile = ref_from_json(j["profile"]);
    if (!r.profile) return fail("profile: invalid");
  }
  if (!str_field("decidedAt", &decided_at)) return fail("decidedAt: missing");
  const auto at = parse_rfc3339(decided_at);
  if (!at) return fail("decidedAt: not an RFC 3339 time");
  r.decided_at = *at;
  if (!str_field("specHash", &r.spec_hash) || r.spec_hash.size() != 16)
    return fail("specHash: missing or not 16 hex digits");
  if (j.contains("message") && !str_field("message", &r.message))
    return fail("message: not a string");
  if (j.contains("mac") && (!str_field("mac", &r.mac) || r.mac.size() != 64))
    return fail("mac: not 64 hex digits");
  if (auto q = j.find("requester"); q != j.end()) {
    if (!q->is_object()) return fail("requester: not an object");
    Requester who;
    auto name = q->find("username");
    if (name == q->end() || !name->is_string()) return fail("requester.username: not a string");
    who.username = name->get<std::string>();
    if (auto groups = q->find("groups"); groups != q->end()) {
      if (!groups->is_array()) return fail("requester.groups: not a list");
      for (const Json& g : *groups) {
        if (!g.is_string()) return fail("requester.groups: not a list of strings");
        who.groups.push_back(g.get<std::string>());
      }
    }
    r.requester = std::move(who);
  }
  return r;
}

std::optional<DecisionRecord> decision_record_of(const TrainingJob& job) {
  auto it = job.metadata.annotations.find(annotation::kDecisionRecord);
  if (it == job.metadata.annotations.end()) return std::nullopt;
  return parse_decision_record(it->second);
}

namespace {

// The subject of a create that has only generateName (its name is given after admission).
std::string generated_subject(const ObjectMeta& meta) {
  return meta.namespace_ + "/" + meta.generate_name + "*";
}

}  // namespace

std::string record_subject(const ObjectMeta& meta) {
  if (meta.name.empty()) return generated_subject(meta);
  return meta.namespace_ + "/" + meta.name;
}

std::string record_signing_text(const DecisionRecord& record, std::string_view subject) {
  DecisionRecord unsigned_record = record;
  unsigned_record.mac.clear();
  // v2: the job's name besides its namespace (v1 signed the namespace alone, so a fresh
  // record copied to a new job of the same spec in that namespace verified).
  std::string text = "commgate-decision-record-v2\n";
  text += subject;
  text += '\n';
  text += to_annotation(unsigned_record);
  return text;
}

std::string record_distrust(const DecisionRecord& record, const TrainingJob& job,
                            const RecordAuthenticator* authenticator) {
  if (!authenticator) return "";
  if (record.mac.empty()) return "the decision record carries no signature";
  // A job created with generateName was decided before it had its name.
  const ObjectMeta& meta = job.metadata;
  const bool verifies = authenticator->verifies(record, record_subject(meta)) ||
                        (!meta.generate_name.empty() && meta.name.starts_with(meta.generate_name) &&
                         authenticator->verifies(record, generated_subject(meta)));
  if (!verifies)
    return "the decision record's signature does not verify (a record is signed for one "
           "job: its namespace and name)";
  // A record decided before its object existed was copied from another one.
  if (job.metadata.creation_timestamp &&
      record.decided_at + kRecordClockSkew < *job.metadata.creation_timestamp)
    return "the decision record was made before the job was created";
  return "";
}

RecordVerdict check_against_record(const DecisionRecord& record, const TrainingJobSpec& spec) {
  if (record.spec_hash != decision_spec_hash(spec)) return RecordVerdict::kSpecChanged;
  switch (record.action) {
    case Action::kDeny:
      return RecordVerdict::kDenied;
    case Action::kGate:
      return spec.suspend ? RecordVerdict::kHolds : RecordVerdict::kUnsuspendedWhileGated;
    case Action::kAdmit:
    case Action::kDownsize:
    case Action::kWarn:
      return spec.num_nodes == record.admitted_nodes ? RecordVerdict::kHolds
                                                     : RecordVerdict::kNodesDifferFromRecord;
  }
  return RecordVerdict::kSpecChanged;
}

std::vector<std::string> decision_fields_changed(const TrainingJobSpec& before,
                                                 const TrainingJobSpec& after) {
  std::vector<std::string> fields;
  auto check = [&](bool differs, const char* path) {
    if (differs) fields.emplace_back(path);
  };
  check(before.num_nodes != after.num_nodes, "spec.numNodes");
  check(before.min_nodes != after.min_nodes, "spec.minNodes");
  check(before.num_proc_per_node != after.num_proc_per_node, "spec.numProcPerNode");
  check(before.node_selector != after.node_selector, "spec.nodeSelector");
  check(before.policy_ref != after.policy_ref, "spec.policyRef.name");
  const ModelSpec& a = before.model;
  const ModelSpec& b = after.model;
  check(a.parameters != b.parameters, "spec.model.parameters");
  check(a.gradient_dtype != b.gradient_dtype, "spec.model.gradientDtype");
  check(a.torch_script != b.torch_script, "spec.model.torchScript");
  check(a.input_shape != b.input_shape, "spec.model.inputShape");
  check(a.batch_size != b.batch_size, "spec.model.batchSize");
  check(a.optimizer != b.optimizer, "spec.model.optimizer");
  check(a.step_time_hint_ms != b.step_time_hint_ms, "spec.model.stepTimeHintMs");
  return fields;
}

bool workload_created(const std::string& phase, const std::string& running_reason) {
  if (phase == "Running" || phase == "Succeeded") return true;
  // Not created: suspended, or a Job of its name that is not its own stands in the way.
  return !running_reason.empty() && running_reason != "Suspended" &&
         running_reason != "PreviousWorkloadExists" && running_reason != "WorkloadNameTaken" &&
         running_reason != "WorkloadReplaced";
}

bool workload_created(const Json& status) {
  if (!status.is_object()) return false;
  const std::string phase = status.contains("phase") && status["phase"].is_string()
                                ? status["phase"].get<std::string>()
                                : "";
  std::string running_reason;
  const auto conditions = status.find("conditions");
  if (conditions != status.end() && conditions->is_array()) {
    for (const Json& c : *conditions) {
      if (!c.is_object() || c.value("type", Json()) != "Running") continue;
      const Json reason = c.value("reason", Json());
      if (reason.is_string()) running_reason = reason.get<std::string>();
      break;
    }
  }
  return workload_created(phase, running_reason);
}

std::string spec_change_not_applied_message(int nodes, const std::string& phase,
                                            const std::vector<std::string>& fields) {
  std::string names;
  for (size_t i = 0; i < fields.size(); ++i)
    names += (i == 0 ? "" : i + 1 == fields.size() ? " and " : ", ") + fields[i];
  const bool over = phase == "Succeeded" || phase == "Failed";
  return std::string("the training Job already ") + (over ? "ran" : "runs") + " with " +
         std::to_string(nodes) + (nodes == 1 ? " node" : " nodes") +
         "; delete and resubmit the TrainingJob to change " + (names.empty() ? "its spec" : names);
}

}  // namespace commgate
