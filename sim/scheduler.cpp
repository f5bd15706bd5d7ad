#include "sim/scheduler.h"

#include <algorithm>

#include "core/field_errors.h"
#include "core/label_selector.h"
#include "core/object_reader.h"
#include "core/pod_requests.h"
#include "core/pool_nodes.h"
#include "core/quantity.h"
#include "sim/api_status.h"
#include "sim/json_fields.h"

namespace commgate::sim {

using nlohmann::json;

namespace {

const json& field(const json& obj, const char* a) {
  static const json null;
  return obj.is_object() && obj.contains(a) ? obj[a] : null;
}

std::map<std::string, std::string> labels_of(const json& obj) {
  std::map<std::string, std::string> out;
  const json& labels = field(field(obj, "metadata"), "labels");
  if (labels.is_object())
    for (const auto& [k, v] : labels.items())
      if (v.is_string()) out[k] = v.get<std::string>();
  return out;
}

bool selector_matches(const json& selector, const std::map<std::string, std::string>& labels) {
  // A null labelSelector in an affinity term matches nothing (metav1.LabelSelectorAsSelector).
  if (!selector.is_object()) return false;
  FieldErrors errors;
  ObjectReader reader(&selector, "labelSelector", errors);
  const LabelSelector s = read_label_selector(reader);
  return s.matches(labels);
}

// nodeSelectorTerms' matchExpressions (In, NotIn, Exists, DoesNotExist, Gt, Lt).
bool node_term_matches(const json& term, const std::map<std::string, std::string>& labels) {
  const json& exprs = field(term, "matchExpressions");
  if (!exprs.is_array() || exprs.empty()) return false;  // an empty term matches no node
  for (const auto& e : exprs) {
    const std::string key = str(field(e, "key")), op = str(field(e, "operator"));
    std::vector<std::string> values;
    if (field(e, "values").is_array())
      for (const auto& v : e["values"]) values.push_back(str(v));
    auto it = labels.find(key);
    const bool has = it != labels.end();
    const bool in = has && std::find(values.begin(), values.end(), it->second) != values.end();
    if (op == "In" && !in) return false;
    if (op == "NotIn" && in) return false;
    if (op == "Exists" && !has) return false;
    if (op == "DoesNotExist" && has) return false;
    if ((op == "Gt" || op == "Lt") && (!has || values.size() != 1)) return false;
    if (op == "Gt" || op == "Lt") {
      try {
        const long long have = std::stoll(it->second), want = std::stoll(values[0]);
        if (op == "Gt" ? !(have > want) : !(have < want)) return false;
      } catch (const std::exception&) {
        return false;
      }
    }
  }
  return true;
}

bool node_affinity_matches(const json& pod, const json& node) {
  const auto labels = labels_of(node);
  const json& selector = field(field(pod, "spec"), "nodeSelector");
  if (selector.is_object())
    for (const auto& [k, v] : selector.items()) {
      auto it = labels.find(k);
      if (it == labels.end() || it->second != str(v)) return false;
    }
  const json& required = field(field(field(field(pod, "spec"), "affinity"), "nodeAffinity"),
                               "requiredDuringSchedulingIgnoredDuringExecution");
  if (!required.is_object()) return true;
  const json& terms = field(required, "nodeSelectorTerms");
  if (!terms.is_array()) return true;
  for (const auto& term : terms)
    if (node_term_matches(term, labels)) return true;
  return false;
}

// Required anti-affinity terms on kubernetes.io/hostname (the only topology key modelled).
std::vector<json> hostname_anti_affinity_terms(const json& pod) {
  std::vector<json> out;
  const json& terms = field(field(field(field(pod, "spec"), "affinity"), "podAntiAffinity"),
                            "requiredDuringSchedulingIgnoredDuringExecution");
  if (terms.is_array())
    for (const auto& t : terms)
      if (str(field(t, "topologyKey")) == "kubernetes.io/hostname") out.push_back(t);
  return out;
}

// Preferred anti-affinity terms on kubernetes.io/hostname, each with its weight.
WeightedTerms preferred_anti_affinity_terms(const json& pod) {
  WeightedTerms out;
  const json& terms = field(field(field(field(pod, "spec"), "affinity"), "podAntiAffinity"),
                            "preferredDuringSchedulingIgnoredDuringExecution");
  if (!terms.is_array()) return out;
  for (const auto& t : terms) {
    const json& term = field(t, "podAffinityTerm");
    if (str(field(term, "topologyKey")) != "kubernetes.io/hostname") continue;
    const int weight = field(t, "weight").is_number_integer() ? t["weight"].get<int>() : 0;
    out.emplace_back(weight, term);
  }
  return out;
}

// Whether `term` of a pod in namespace `term_ns` selects `other`.
bool term_selects(const json& term, const std::string& term_ns, const json& other) {
  std::vector<std::string> namespaces;
  if (field(term, "namespaces").is_array())
    for (const auto& n : term["namespaces"]) namespaces.push_back(str(n));
  const std::string other_ns = str(field(field(other, "metadata"), "namespace"));
  const bool any_ns = field(term, "namespaceSelector").is_object() &&
                      term["namespaceSelector"].empty();  // {} selects every namespace
  if (!any_ns) {
    if (namespaces.empty()) namespaces.push_back(term_ns);
    if (std::find(namespaces.begin(), namespaces.end(), other_ns) == namespaces.end()) return false;
  }
  return selector_matches(field(term, "labelSelector"), labels_of(other));
}

struct SpreadConstraint {
  int max_skew = 1;
  std::string key;
  bool hard = false;  // DoNotSchedule
  json selector;      // labelSelector with matchLabelKeys folded in
};

std::vector<SpreadConstraint> spread_constraints(const json& pod) {
  std::vector<SpreadConstraint> out;
  const json& list = field(field(pod, "spec"), "topologySpreadConstraints");
  if (!list.is_array()) return out;
  const auto own = labels_of(pod);
  for (const auto& c : list) {
    SpreadConstraint sc;
    sc.max_skew = field(c, "maxSkew").is_number_integer() ? c["maxSkew"].get<int>() : 1;
    sc.key = str(field(c, "topologyKey"));
    sc.hard = str(field(c, "whenUnsatisfiable")) != "ScheduleAnyway";
    sc.selector = field(c, "labelSelector").is_object() ? c["labelSelector"] : json(nullptr);
    if (field(c, "matchLabelKeys").is_array() && sc.selector.is_object()) {
      json& extra = sc.selector["matchExpressions"];
      if (!extra.is_array()) extra = json::array();
      for (const auto& k : c["matchLabelKeys"]) {
        auto it = own.find(str(k));
        if (it != own.end())
          extra.push_back({{"key", it->first}, {"operator", "In"}, {"values", {it->second}}});
      }
    }
    if (!sc.key.empty()) out.push_back(std::move(sc));
  }
  return out;
}

// The matching pods per domain (the key's value) of one constraint, over the nodes that
// pass the pod's node affinity and carry the key.
std::map<std::string, int> domain_counts(
    const json& pod, const SpreadConstraint& sc, const std::vector<json>& nodes,
    const std::map<std::string, std::vector<json>>& pods_by_node) {
  const std::string ns = str(field(field(pod, "metadata"), "namespace"));
  std::map<std::string, int> counts;
  for (const auto& n : nodes) {
    const auto labels = labels_of(n);
    auto domain = labels.find(sc.key);
    if (domain == labels.end() || !node_affinity_matches(pod, n)) continue;
    int& count = counts[domain->second];
    auto bound = pods_by_node.find(str(field(field(n, "metadata"), "name")));
    if (bound == pods_by_node.end()) continue;
    for (const auto& p : bound->second)
      if (!is_terminal(p) && !field(p, "metadata").contains("deletionTimestamp") &&
          str(field(field(p, "metadata"), "namespace")) == ns &&
          selector_matches(sc.selector, labels_of(p)))
        ++count;
  }
  return counts;
}

}  // namespace

std::vector<std::string> spread_failures(const json& pod, const json& node,
                                         const std::vector<json>& nodes,
                                         const std::map<std::string, std::vector<json>>& by_node) {
  const auto constraints = spread_constraints(pod);
  if (constraints.empty()) return {};
  const auto labels = labels_of(node);
  for (const auto& sc : constraints) {
    if (!sc.hard) continue;
    auto domain = labels.find(sc.key);
    if (domain == labels.end())
      return {"node(s) didn't match pod topology spread constraints (missing required label)"};
    const auto counts = domain_counts(pod, sc, nodes, by_node);
    int least = 0;
    bool first = true;
    for (const auto& [d, n] : counts) {
      least = first ? n : std::min(least, n);
      first = false;
    }
    auto here = counts.find(domain->second);
    const int self = selector_matches(sc.selector, labels_of(pod)) ? 1 : 0;
    if ((here == counts.end() ? 0 : here->second) + self - least > sc.max_skew)
      return {"node(s) didn't match pod topology spread constraints"};
  }
  return {};
}

int spread_penalty(const json& pod, const json& node, const std::vector<json>& nodes,
                   const std::map<std::string, std::vector<json>>& by_node) {
  const auto labels = labels_of(node);
  int penalty = 0;
  for (const auto& sc : spread_constraints(pod)) {
    if (sc.hard) continue;
    const auto counts = domain_counts(pod, sc, nodes, by_node);
    auto domain = labels.find(sc.key);
    if (domain == labels.end()) {
      int most = 0;
      for (const auto& [d, n] : counts) most = std::max(most, n);
      penalty += most + 1;
    } else {
      auto here = counts.find(domain->second);
      penalty += here == counts.end() ? 0 : here->second;
    }
  }
  return penalty;
}

int anti_affinity_penalty(const WeightedTerms& terms, const std::string& ns,
                          const NodeUsage& usage) {
  int penalty = 0;
  for (const auto& [weight, term] : terms)
    for (const auto& other : usage.live)
      if (term_selects(term, ns, other)) penalty += weight;
  return penalty;
}

// core/pod_requests.h's rule, which core's workload gate and pool check share.
std::map<std::string, double> pod_requests(const json& pod) {
  return commgate::pod_requests(field(pod, "spec"));
}

bool is_terminal(const json& pod) {
  const std::string phase = str(field(field(pod, "status"), "phase"));
  return phase == "Succeeded" || phase == "Failed";
}

bool tolerates(const json& pod, const json& taint) {
  return commgate::tolerates(
      field(field(pod, "spec"), "tolerations"),
      {str(field(taint, "key")), str(field(taint, "value")), str(field(taint, "effect"))});
}

NodeUsage node_usage(const std::vector<json>& pods_on_node) {
  NodeUsage usage;
  for (const auto& p : pods_on_node) add_to_usage(usage, p);
  return usage;
}

void add_to_usage(NodeUsage& usage, const json& pod) {
  if (is_terminal(pod)) return;
  ++usage.pods;
  for (const auto& [k, v] : pod_requests(pod)) usage.requested[k] += v;
  const std::string ns = str(field(field(pod, "metadata"), "namespace"));
  for (auto& term : hostname_anti_affinity_terms(pod))
    usage.anti_affinity.emplace_back(ns, std::move(term));
  usage.live.push_back(pod);
}

std::vector<std::string> fit_failures(const json& pod, const json& node,
                                      const std::vector<json>& pods_on_node) {
  return fit_failures(pod, pod_requests(pod), node, node_usage(pods_on_node));
}

std::vector<std::string> fit_failures(const json& pod,
                                      const std::map<std::string, double>& requests,
                                      const json& node, const NodeUsage& usage) {
  // NodeUnschedulable
  if (field(field(node, "spec"), "unschedulable").is_boolean() &&
      node["spec"]["unschedulable"].get<bool>()) {
    const json taint = {{"key", "node.kubernetes.io/unschedulable"}, {"effect", "NoSchedule"}};
    if (!tolerates(pod, taint)) return {"node(s) were unschedulable"};
  }
  // TaintToleration: the first untolerated NoSchedule/NoExecute taint.
  const json& taints = field(field(node, "spec"), "taints");
  if (taints.is_array())
    for (const auto& t : taints) {
      const std::string effect = str(field(t, "effect"));
      if (effect != "NoSchedule" && effect != "NoExecute") continue;
      if (!tolerates(pod, t))
        return {"node(s) had untolerated taint {" + str(field(t, "key")) + ": " +
                str(field(t, "value")) + "}"};
    }
  // NodeAffinity (nodeSelector and required node affinity)
  if (!node_affinity_matches(pod, node))
    return {"node(s) didn't match Pod's node affinity/selector"};
  // NodeResourcesFit
  const json& status = field(node, "status");
  const json& allocatable =
      field(status, "allocatable").is_object() ? status["allocatable"] : field(status, "capacity");
  std::vector<std::string> insufficient;
  if (field(allocatable, "pods").is_string() || field(allocatable, "pods").is_number()) {
    if (static_cast<double>(usage.pods) + 1 > resource_quantity(allocatable["pods"]))
      insufficient.push_back("Too many pods");
  }
  for (const auto& [k, want] : requests) {
    if (want <= 0) continue;
    const double have =
        field(allocatable, k.c_str()).is_null() ? 0.0 : resource_quantity(allocatable[k]);
    auto used = usage.requested.find(k);
    const double in_use = used == usage.requested.end() ? 0.0 : used->second;
    // A relative epsilon: quantities are parsed into doubles ("100m" + "900m" == "1").
    if (in_use + want > have * (1 + 1e-9) + 1e-12) insufficient.push_back("Insufficient " + k);
  }
  if (!insufficient.empty()) return insufficient;
  // InterPodAffinity: the pod's required anti-affinity, then existing pods' against it.
  const std::string ns = str(field(field(pod, "metadata"), "namespace"));
  for (const auto& term : hostname_anti_affinity_terms(pod))
    for (const json& p : usage.live)
      if (term_selects(term, ns, p)) return {"node(s) didn't match pod anti-affinity rules"};
  for (const auto& [pns, term] : usage.anti_affinity)
    if (term_selects(term, pns, pod))
      return {"node(s) didn't satisfy existing pods anti-affinity rules"};
  return {};
}

std::string unschedulable_message(std::size_t node_count,
                                  const std::vector<std::vector<std::string>>& failures) {
  if (node_count == 0) return "no nodes available to schedule pods";
  std::map<std::string, int> histogram;
  for (const auto& reasons : failures)
    for (const auto& r : reasons) ++histogram[r];
  std::vector<std::string> parts;
  for (const auto& [reason, count] : histogram)
    parts.push_back(std::to_string(count) + " " + reason);
  std::sort(parts.begin(), parts.end());
  std::string msg = "0/" + std::to_string(node_count) + " nodes are available:";
  for (size_t i = 0; i < parts.size(); ++i) msg += (i == 0 ? " " : ", ") + parts[i];
  return msg + ".";
}

Scheduler::Scheduler(ObjectStore& store)
    : store_(store),
      pods_(*store.find_resource("", "v1", "pods")),
      nodes_(*store.find_resource("", "v1", "nodes")),
      loop_(store, {pods_, nodes_}, [this]() -> std::optional<TimePoint> {
        try {
          schedule_once();
        } catch (const std::exception&) {
          // A pod or node changed under us (409/404): the event that did it runs us again.
        }
        return std::nullopt;
      }) {}

Scheduler::~Scheduler() {
  stop();
}

void Scheduler::start() {
  loop_.start();
}

void Scheduler::stop() {
  loop_.stop();
}

namespace {

// Sets the PodScheduled condition, keeping lastTransitionTime when the status is the same.
json with_scheduled_condition(json pod, const std::string& status, const std::string& reason,
                              const std::string& message) {
  json& st = pod["status"];
  if (!st.is_object()) st = json::object();
  if (!st.contains("phase")) st["phase"] = "Pending";
  json cond = {{"type", "PodScheduled"}, {"status", status}, {"lastProbeTime", nullptr}};
  if (!reason.empty()) cond["reason"] = reason;
  if (!message.empty()) cond["message"] = message;
  json kept = json::array();
  std::string since = format_rfc3339(Clock::now());
  if (st.contains("conditions") && st["conditions"].is_array())
    for (const auto& c : st["conditions"]) {
      if (c.value("type", "") != "PodScheduled") {
        kept.push_back(c);
      } else if (c.value("status", "") == status && c.contains("lastTransitionTime")) {
        since = c["lastTransitionTime"];
      }
    }
  cond["lastTransitionTime"] = since;
  kept.push_back(cond);
  st["conditions"] = kept;
  return pod;
}

// Whether the pod's PodScheduled condition already says this.
bool has_scheduled_condition(const json& pod, const std::string& status, const std::string& reason,
                             const std::string& message) {
  const json& conditions = field(field(pod, "status"), "conditions");
  if (!conditions.is_array()) return false;
  for (const auto& c : conditions)
    if (str(field(c, "type")) == "PodScheduled")
      return str(field(c, "status")) == status && str(field(c, "reason")) == reason &&
             str(field(c, "message")) == message;
  return false;
}

}  // namespace

int Scheduler::schedule_once() {
  const auto nodes = store_.list(nodes_, "", {}).items;  // name order
  const auto pods = store_.list(pods_, "", {}).items;
  std::map<std::string, std::vector<json>> on_node;
  // Oldest first (the scheduling queue's FIFO at equal priority); same second: by name,
  // so an Indexed Job's pods are placed in index order.
  using QueueKey = std::pair<std::string, std::string>;  // creationTimestamp, name
  std::vector<std::pair<QueueKey, const json*>> queue;
  for (const auto& p : pods) {
    const std::string node = str(field(field(p, "spec"), "nodeName"));
    if (!node.empty()) {
      on_node[node].push_back(p);
    } else if (!field(p, "metadata").contains("deletionTimestamp") && !is_terminal(p)) {
      queue.push_back({{str(p["metadata"]["creationTimestamp"]), str(p["metadata"]["name"])}, &p});
    }
  }
  std::sort(queue.begin(), queue.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  std::map<std::string, NodeUsage> usage;  // by node name
  for (const auto& [node_name, bound_there] : on_node) usage[node_name] = node_usage(bound_there);
  int bound = 0;
  for (const auto& queued : queue) {
    const json& pod = *queued.second;
    const auto requests = pod_requests(pod);
    const std::string ns = str(pod["metadata"]["namespace"]), name = str(pod["metadata"]["name"]);
    const std::string uid = str(pod["metadata"]["uid"]);
    std::vector<std::vector<std::string>> failures;
    std::string chosen;
    // Without ScheduleAnyway constraints or preferred anti-affinity every fitting node
    // scores the same: the first wins.
    const WeightedTerms preferred = preferred_anti_affinity_terms(pod);
    bool scored = !preferred.empty();
    for (const auto& sc : spread_constraints(pod)) scored = scored || !sc.hard;
    int best = 0;
    for (const auto& node : nodes) {
      const std::string node_name = str(node["metadata"]["name"]);
      auto reasons = fit_failures(pod, requests, node, usage[node_name]);
      if (reasons.empty()) reasons = spread_failures(pod, node, nodes, on_node);
      if (!reasons.empty()) {
        failures.push_back(std::move(reasons));
        continue;
      }
      const int penalty = scored ? spread_penalty(pod, node, nodes, on_node) +
                                       anti_affinity_penalty(preferred, ns, usage[node_name])
                                 : 0;
      if (chosen.empty() || penalty < best) {
        chosen = node_name;
        best = penalty;
      }
      if (!scored) break;
    }
    auto same_pod = [&](const json& current) {
      if (str(current["metadata"]["uid"]) != uid) throw not_found(pods_, name);
    };
    try {
      if (chosen.empty()) {
        const std::string message = unschedulable_message(nodes.size(), failures);
        // Already marked so (the pass after any pod change sees every pending pod again):
        // no write, which would be a no-op anyway, but costs a copy under the store's lock.
        if (has_scheduled_condition(pod, "False", "Unschedulable", message)) continue;
        store_.mutate(pods_, ns, name, WritePart::kStatus, [&](const json& current) {
          same_pod(current);
          return with_scheduled_condition(current, "False", "Unschedulable", message);
        });
        continue;
      }
      // The Binding subresource's effect: spec.nodeName, then PodScheduled=True.
      json bound_pod = store_.mutate(pods_, ns, name, WritePart::kMain, [&](const json& current) {
        same_pod(current);
        if (!str(field(field(current, "spec"), "nodeName")).empty())
          throw conflict(pods_, name);  // bound meanwhile
        json next = current;
        next["spec"]["nodeName"] = chosen;
        return next;
      });
      store_.mutate(pods_, ns, name, WritePart::kStatus, [&](const json& current) {
        same_pod(current);
        return with_scheduled_condition(current, "True", "", "");
      });
      add_to_usage(usage[chosen], bound_pod);
      on_node[chosen].push_back(std::move(bound_pod));
      ++bound;
    } catch (const ApiError&) {
      // Deleted or changed meanwhile: its event makes another pass.
    }
  }
  return bound;
}

}  // namespace commgate::sim
