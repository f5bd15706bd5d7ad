#include "cli/kubectl_plugin.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <ostream>
#include <sstream>

#include "cli/manifest_yaml.h"
#include "core/annotations.h"
#include "core/quantity.h"
#include "core/significant_digits.h"

namespace commgate {

using nlohmann::json;

namespace {

constexpr const char* kPluginUsageText = R"(kubectl commgate: ask the cluster what commgate decides.

Usage:
  kubectl commgate evaluate -f FILE      what the admission webhook would decide for this
                                         TrainingJob now (a server-side dry run: nothing
                                         is created)
  kubectl commgate explain tj NAME       a TrainingJob's decision, numbers, advice,
                                         conditions and Events
  kubectl commgate pools                 the measured pools: link, age, and the policies
                                         for which each measurement is stale

Flags (passed to kubectl): --kubeconfig FILE, --context NAME, -n/--namespace NS
  -o, --output table|json|yaml           default table

Exit codes: 0 success (evaluate: it would run: admitted, downsized or admitted over
policy), 1 error, 2 usage, 3 evaluate: it would be refused, 4 evaluate: it would be
suspended until its pool is measured (or has room).
)";

// Columns padded to their widest cell, two spaces apart (as kubectl prints).
std::string table_text(const std::vector<std::vector<std::string>>& rows,
                       const std::string& indent = "") {
  std::vector<size_t> widths;
  for (const auto& row : rows)
    for (size_t i = 0; i < row.size(); ++i) {
      if (widths.size() <= i) widths.push_back(0);
      widths[i] = std::max(widths[i], row[i].size());
    }
  std::string out;
  for (const auto& row : rows) {
    std::string line = indent;
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(widths[i] - row[i].size() + 2, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

std::string str(const json& j, const char* key, const std::string& fallback = "") {
  if (!j.is_object()) return fallback;
  const auto it = j.find(key);
  if (it == j.end()) return fallback;
  if (it->is_string()) return it->get<std::string>();
  if (it->is_number_integer()) return std::to_string(it->get<int64_t>());
  if (it->is_number()) {
    // At most the 4 significant digits a measurement has (core/significant_digits.h).
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.10g", round_significant(it->get<double>()));
    return buf;
  }
  if (it->is_boolean()) return it->get<bool>() ? "true" : "false";
  return fallback;
}

const json& member(const json& j, const char* key) {
  static const json kNull;
  if (!j.is_object()) return kNull;
  const auto it = j.find(key);
  return it == j.end() ? kNull : *it;
}

// "3m", "2h5m", "4d": how kubectl's AGE columns read.
std::string age_text(TimePoint then, TimePoint now) {
  const auto s = std::chrono::duration_cast<std::chrono::seconds>(now - then).count();
  if (s < 0) return "0s";
  if (s < 120) return std::to_string(s) + "s";
  if (s < 3600) return std::to_string(s / 60) + "m";
  if (s < 48 * 3600)
    return std::to_string(s / 3600) + "h" +
           (s % 3600 >= 60 ? std::to_string(s % 3600 / 60) + "m" : "");
  return std::to_string(s / 86400) + "d";
}

std::string age_of(const std::string& rfc3339, TimePoint now) {
  const auto t = parse_rfc3339(rfc3339);
  return t ? age_text(*t, now) : "-";
}

std::string selector_text(const json& selector) {
  if (!selector.is_object() || selector.empty()) return "(every node)";
  std::string out;
  for (const auto& [k, v] : selector.items())
    out += (out.empty() ? "" : ",") + k + "=" + (v.is_string() ? v.get<std::string>() : v.dump());
  return out;
}

// The webhook's refusal as kubectl prints it: `Error from server (Forbidden): error when
// creating "job.yaml": admission webhook "x" denied the request: <message>`.
std::string refusal_of(const std::string& stderr_text) {
  const std::string marker = "denied the request: ";
  const auto at = stderr_text.find(marker);
  if (at == std::string::npos) return "";
  std::string message = stderr_text.substr(at + marker.size());
  while (!message.empty() && (message.back() == '\n' || message.back() == ' ')) message.pop_back();
  return message;
}

std::string written(const json& doc, const std::string& output) {
  if (output == "json") return doc.dump(2) + "\n";
  return to_yaml(doc);
}

struct PluginFlags {
  std::vector<std::string> kubectl;  // passed to every kubectl call
  std::string output = "table";
  std::string filename;
  std::vector<std::string> positional;
  std::string error;
};

PluginFlags parse_flags(const std::vector<std::string>& args) {
  PluginFlags f;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string flag = args[i];
    std::string value;
    bool inline_value = false;
    if (flag.rfind("--", 0) == 0 && flag.find('=') != std::string::npos) {
      value = flag.substr(flag.find('=') + 1);
      flag = flag.substr(0, flag.find('='));
      inline_value = true;
    }
    auto take = [&]() -> bool {
      if (inline_value) return true;
      if (i + 1 >= args.size()) {
        f.error = flag + ": needs a value";
        return false;
      }
      value = args[++i];
      return true;
    };
    if (flag == "-n" || flag == "--namespace") {
      if (take()) f.kubectl.insert(f.kubectl.end(), {"--namespace", value});
    } else if (flag == "--context" || flag == "--kubeconfig" || flag == "--request-timeout") {
      if (take()) f.kubectl.insert(f.kubectl.end(), {flag, value});
    } else if (flag == "-o" || flag == "--output") {
      if (take()) {
        if (value != "table" && value != "json" && value != "yaml")
          f.error = flag + ": must be table, json or yaml, got \"" + value + "\"";
        f.output = value;
      }
    } else if (flag == "-f" || flag == "--filename") {
      if (take()) f.filename = value;
    } else if (flag.size() > 1 && flag[0] == '-') {
      f.error = "unknown flag \"" + args[i] + "\"";
    } else {
      f.positional.push_back(flag);
    }
    if (!f.error.empty()) break;
  }
  return f;
}

// A kubectl call that failed: what it said, for the user.
int kubectl_failed(const std::string& what, const Captured& r, std::ostream& err) {
  err << "kubectl commgate: " << what << " failed (kubectl exit " << r.code << "):\n" << r.err;
  if (!r.err.empty() && r.err.back() != '\n') err << "\n";
  return kPluginError;
}

json parsed_or_null(const std::string& text) {
  return json::parse(text, nullptr, false);
}

int evaluate(const PluginFlags& f, const KubectlRunner& kubectl, std::ostream& out,
             std::ostream& err) {
  if (f.filename.empty()) {
    err << "kubectl commgate evaluate: -f FILE is required (the TrainingJob to evaluate; - for "
           "stdin)\n";
    return kPluginUsage;
  }
  std::vector<std::string> args = {"create", "--dry-run=server", "-o", "json", "-f", f.filename};
  args.insert(args.end(), f.kubectl.begin(), f.kubectl.end());
  const Captured r = kubectl(args);
  const std::vector<std::string> warnings = kubectl_warnings(r.err);
  const std::string refusal = r.code == 0 ? "" : refusal_of(r.err);
  if (r.code != 0 && refusal.empty()) return kubectl_failed("the dry run", r, err);
  json returned;
  if (r.code == 0) {
    returned = parsed_or_null(r.out);
    if (!returned.is_object() || returned.value("kind", "") != "TrainingJob") {
      err << "kubectl commgate evaluate: " << f.filename
          << " is not one TrainingJob (commgate evaluates kind TrainingJob of "
             "commgate.io/v1alpha1; kubectl returned "
          << (returned.is_object() ? "kind \"" + returned.value("kind", "") + "\"" : "no object")
          << ")\n";
      return kPluginError;
    }
  }
  const json evaluation = evaluation_of(returned, refusal, warnings);
  out << (f.output == "table" ? evaluation_table(evaluation) : written(evaluation, f.output));
  const std::string action = evaluation.value("decision", "");
  if (action == "Deny") return kPluginWouldDeny;
  if (action == "Gate") return kPluginWouldGate;
  return kPluginOk;
}

int explain(const PluginFlags& f, const KubectlRunner& kubectl, std::ostream& out,
            std::ostream& err, TimePoint now) {
  const std::vector<std::string>& p = f.positional;
  static const std::vector<std::string> kKinds = {"tj", "trainingjob", "trainingjobs",
                                                  "trainingjobs.commgate.io"};
  if (p.size() != 3 || std::find(kKinds.begin(), kKinds.end(), p[1]) == kKinds.end()) {
    err << "kubectl commgate explain: usage: kubectl commgate explain tj NAME [-n NAMESPACE]\n";
    return kPluginUsage;
  }
  const std::string& name = p[2];
  std::vector<std::string> get = {"get", "trainingjobs.commgate.io", name, "-o", "json"};
  get.insert(get.end(), f.kubectl.begin(), f.kubectl.end());
  const Captured job = kubectl(get);
  if (job.code != 0) return kubectl_failed("reading TrainingJob " + name, job, err);
  const json tj = parsed_or_null(job.out);
  if (!tj.is_object()) {
    err << "kubectl commgate explain: kubectl returned no TrainingJob object\n";
    return kPluginError;
  }
  std::vector<std::string> list = {
      "get",  "events",           "-o",
      "json", "--field-selector", "involvedObject.kind=TrainingJob,involvedObject.name=" + name};
  list.insert(list.end(), f.kubectl.begin(), f.kubectl.end());
  const Captured events = kubectl(list);
  const json explanation =
      explanation_of(tj, events.code == 0 ? parsed_or_null(events.out) : json(), now);
  out << (f.output == "table" ? explanation_text(explanation) : written(explanation, f.output));
  return kPluginOk;
}

int pools(const PluginFlags& f, const KubectlRunner& kubectl, std::ostream& out, std::ostream& err,
          TimePoint now) {
  std::vector<std::string> profiles_args = {"get", "commprofiles.commgate.io", "-o", "json"};
  profiles_args.insert(profiles_args.end(), f.kubectl.begin(), f.kubectl.end());
  const Captured profiles = kubectl(profiles_args);
  if (profiles.code != 0) return kubectl_failed("listing CommProfiles", profiles, err);
  std::vector<std::string> policies_args = {"get", "commpolicies.commgate.io", "-o", "json"};
  policies_args.insert(policies_args.end(), f.kubectl.begin(), f.kubectl.end());
  const Captured policies = kubectl(policies_args);
  const json doc = pools_of(parsed_or_null(profiles.out),
                            policies.code == 0 ? parsed_or_null(policies.out) : json(), now);
  out << (f.output == "table" ? pools_table(doc) : written(doc, f.output));
  return kPluginOk;
}

}  // namespace

std::vector<std::string> kubectl_warnings(const std::string& stderr_text) {
  std::vector<std::string> warnings;
  std::istringstream in(stderr_text);
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("Warning: ", 0) == 0) warnings.push_back(line.substr(9));
  return warnings;
}

json evaluation_of(const json& returned, const std::string& refusal,
                   const std::vector<std::string>& warnings) {
  json e = {{"dryRun", true}, {"warnings", warnings}, {"advice", json::array()}};
  for (const std::string& w : warnings)
    if (w.rfind("commgate: to run ", 0) == 0) e["advice"].push_back(w.substr(10));
  if (!refusal.empty()) {
    e["decision"] = "Deny";
    e["message"] = refusal;
    return e;
  }
  const json& meta = member(returned, "metadata");
  e["trainingJob"] = str(meta, "namespace") + "/" + str(meta, "name");
  const json& annotations = member(meta, "annotations");
  const json record = parsed_or_null(str(annotations, annotation::kDecisionRecord));
  e["decision"] = str(annotations, annotation::kDecision, "none");
  e["reason"] = str(annotations, annotation::kReason);
  e["requestedNodes"] = record.is_object() ? record.value("requestedNodes", json())
                                           : json(str(annotations, annotation::kRequestedNodes));
  e["admittedNodes"] = member(member(returned, "spec"), "numNodes");
  if (record.is_object()) {
    e["message"] = record.value("message", "");
    if (record.contains("policy")) e["policy"] = member(record["policy"], "name");
  }
  e["suspended"] = member(member(returned, "spec"), "suspend").is_boolean() &&
                   member(member(returned, "spec"), "suspend").get<bool>();
  return e;
}

std::string evaluation_table(const json& e) {
  std::string out;
  const std::string action = e.value("decision", "");
  if (action == "Deny") {
    out += "Deny: the admission webhook would refuse this TrainingJob.\n";
  } else {
    out += table_text({{"TRAININGJOB", "DECISION", "REASON", "REQUESTED", "ADMITTED", "POLICY"},
                       {e.value("trainingJob", ""), action, e.value("reason", ""),
                        str(e, "requestedNodes", "-"), str(e, "admittedNodes", "-"),
                        e.value("policy", "-").empty() ? "-" : e.value("policy", "-")}});
  }
  if (!e.value("message", "").empty()) out += "\n" + e.value("message", "") + "\n";
  if (!e["advice"].empty()) {
    out += "\nAdvice:\n";
    for (const auto& a : e["advice"]) out += "  - " + a.get<std::string>() + "\n";
  }
  std::vector<std::string> other;
  for (const auto& w : e["warnings"]) {
    const std::string text = w.get<std::string>();
    if (text.rfind("commgate: to run ", 0) != 0) other.push_back(text);
  }
  if (!other.empty()) {
    out += "\nWarnings from the admission webhook:\n";
    for (const auto& w : other) out += "  " + w + "\n";
  }
  out += "\n(a server-side dry run through the admission webhook: nothing was created)\n";
  return out;
}

json explanation_of(const json& tj, const json& events, TimePoint now) {
  const json& meta = member(tj, "metadata");
  const json& status = member(tj, "status");
  json x = {{"trainingJob", str(meta, "namespace") + "/" + str(meta, "name")},
            {"phase", str(status, "phase", "Pending")},
            {"requestedNodes", member(member(tj, "spec"), "numNodes")},
            {"decision", member(status, "decision")},
            {"measurement", member(status, "measurement")},
            {"conditions", member(status, "conditions").is_array() ? member(status, "conditions")
                                                                   : json::array()}};
  if (const json& m = member(status, "measurement"); m.is_object() && m.contains("probeTime"))
    x["measurementAge"] = age_of(str(m, "probeTime"), now);
  if (!events.is_object()) {
    x["events"] = nullptr;  // could not be listed
    return x;
  }
  json rows = json::array();
  for (const json& e : member(events, "items")) {
    std::string when = str(e, "lastTimestamp");
    if (when.empty()) when = str(e, "eventTime");
    if (when.empty()) when = str(member(e, "metadata"), "creationTimestamp");
    rows.push_back({{"age", age_of(when, now)},
                    {"time", when},
                    {"type", str(e, "type")},
                    {"reason", str(e, "reason")},
                    {"message", str(e, "message", str(e, "note"))}});
  }
  std::stable_sort(rows.begin(), rows.end(), [](const json& a, const json& b) {
    return a.value("time", "") < b.value("time", "");
  });
  x["events"] = rows;
  return x;
}

std::string explanation_text(const json& x) {
  std::string out;
  const json& d = member(x, "decision");
  std::vector<std::vector<std::string>> head = {{"TrainingJob:", x.value("trainingJob", "")},
                                                {"Phase:", x.value("phase", "")}};
  if (d.is_object()) {
    head.push_back({"Decision:", str(d, "action") + " (" + str(d, "reason") + "), " +
                                     str(d, "requestedNodes") + " nodes asked, " +
                                     str(d, "admittedNodes") + " admitted"});
    head.push_back({"Policy:", str(d, "policy", "-")});
  } else {
    head.push_back({"Decision:", "none yet"});
  }
  const json& m = member(x, "measurement");
  if (m.is_object()) {
    std::string link = "busbw " + str(m, "busbwGBps", "?") + " GB/s, latency " +
                       str(m, "latencyUs", "?") + " us, probed on " + str(m, "nodesProbed", "?") +
                       " nodes (" + str(m, "backend", "?") + " over " + str(m, "transport", "?") +
                       "), " + x.value("measurementAge", "?") + " ago";
    head.push_back({"Measurement:", link});
    if (m.contains("computeStepMs"))
      head.push_back({"", "compute step " + str(m, "computeStepMs") + " ms (" +
                              str(m, "computeSource", "measured") + ")"});
    if (m.contains("measuredCommShare"))
      head.push_back({"", "the probe's DDP step exposed " +
                              format_percent(m["measuredCommShare"].get<double>()) +
                              " in communication (" + str(m, "measuredStepMs") + " ms step)"});
  }
  out += table_text(head);
  if (d.is_object() && !str(d, "message").empty()) out += "\n" + str(d, "message") + "\n";
  if (d.is_object() && member(d, "predictions").is_array() && !d["predictions"].empty()) {
    std::vector<std::vector<std::string>> rows = {{"NODES", "STEP(ms)", "COMPUTE(ms)",
                                                   "EXPOSED COMM(ms)", "COMM SHARE", "SPEEDUP",
                                                   "EFFICIENCY", ""}};
    const std::string asked = str(d, "requestedNodes"), given = str(d, "admittedNodes");
    for (const json& p : d["predictions"]) {
      const std::string n = str(p, "nodes");
      std::string note = p.value("measured", false) ? "measured by the probe" : "";
      if (n == asked) note += std::string(note.empty() ? "" : ", ") + "asked";
      if (n == given) note += std::string(note.empty() ? "" : ", ") + "admitted";
      rows.push_back({n, str(p, "stepTimeMs"), str(p, "computeMs"), str(p, "exposedCommMs"),
                      p.contains("commShare") ? format_percent(p["commShare"].get<double>()) : "",
                      str(p, "speedup"),
                      p.contains("scalingEfficiency")
                          ? format_percent(p["scalingEfficiency"].get<double>())
                          : "",
                      note});
    }
    out += "\nPredictions:\n" + table_text(rows, "  ");
  }
  if (d.is_object() && member(d, "advice").is_array() && !d["advice"].empty()) {
    out += "\nAdvice:\n";
    for (const json& a : d["advice"]) out += "  - " + str(a, "text") + "\n";
  }
  if (!x["conditions"].empty()) {
    std::vector<std::vector<std::string>> rows = {{"TYPE", "STATUS", "REASON", "MESSAGE"}};
    for (const json& c : x["conditions"])
      rows.push_back({str(c, "type"), str(c, "status"), str(c, "reason"), str(c, "message")});
    out += "\nConditions:\n" + table_text(rows, "  ");
  }
  if (x["events"].is_null()) {
    out += "\nEvents: (could not be listed)\n";
  } else if (x["events"].empty()) {
    out += "\nEvents: none\n";
  } else {
    std::vector<std::vector<std::string>> rows = {{"AGE", "TYPE", "REASON", "MESSAGE"}};
    for (const json& e : x["events"])
      rows.push_back({str(e, "age"), str(e, "type"), str(e, "reason"), str(e, "message")});
    out += "\nEvents:\n" + table_text(rows, "  ");
  }
  return out;
}

json pools_of(const json& profiles, const json& policies, TimePoint now) {
  // Each policy's measurementTTL; absent in the list when policies could not be read.
  std::map<std::string, std::chrono::nanoseconds> ttls;
  for (const json& p : member(policies, "items")) {
    std::string why;
    if (const auto ttl = parse_duration(str(member(p, "spec"), "measurementTTL"), &why))
      ttls[str(member(p, "metadata"), "name")] = *ttl;
  }
  json rows = json::array();
  for (const json& profile : member(profiles, "items")) {
    const json& status = member(profile, "status");
    const json& link = member(status, "link");
    json row = {{"pool", str(member(profile, "metadata"), "name")},
                {"nodeSelector", selector_text(member(member(profile, "spec"), "nodeSelector"))},
                {"measured", link.is_object()}};
    if (link.is_object()) {
      row["busbwGBps"] = member(link, "busbwGBps");
      row["latencyUs"] = member(link, "latencyUs");
      row["nodesProbed"] = member(link, "nodesProbed");
      row["backend"] = str(status, "backend");
      row["transport"] = str(status, "transport");
      row["measuredAt"] = str(link, "measuredAt");
      row["age"] = age_of(str(link, "measuredAt"), now);
      json stale = json::array();
      if (const auto at = parse_rfc3339(str(link, "measuredAt")))
        for (const auto& [policy, ttl] : ttls)
          if (now - *at > ttl) stale.push_back(policy);
      row["staleFor"] = policies.is_object() ? stale : json();
    }
    row["models"] = member(status, "computeSteps").is_array() ? status["computeSteps"].size() : 0;
    rows.push_back(std::move(row));
  }
  return {{"pools", rows}};
}

std::string pools_table(const json& doc) {
  std::vector<std::vector<std::string>> rows = {{"POOL", "NODESELECTOR", "BUSBW(GB/s)",
                                                 "LATENCY(us)", "PROBED", "TRANSPORT", "MODELS",
                                                 "AGE", "STALE FOR"}};
  for (const json& p : doc["pools"]) {
    if (!p.value("measured", false)) {
      rows.push_back({str(p, "pool"), str(p, "nodeSelector"), "-", "-", "-", "-", str(p, "models"),
                      "-", "not measured yet"});
      continue;
    }
    std::string stale = "(policies not readable)";
    if (p["staleFor"].is_array()) {
      stale.clear();
      for (const auto& name : p["staleFor"])
        stale += (stale.empty() ? "" : ",") + name.get<std::string>();
      if (stale.empty()) stale = "-";
    }
    rows.push_back({str(p, "pool"), str(p, "nodeSelector"), str(p, "busbwGBps"),
                    str(p, "latencyUs"), str(p, "nodesProbed") + " nodes",
                    str(p, "backend") + "/" + str(p, "transport"), str(p, "models"), str(p, "age"),
                    stale});
  }
  if (rows.size() == 1) return "No CommProfiles: no pool has been measured yet.\n";
  return table_text(rows);
}

int run_kubectl_plugin(const std::vector<std::string>& args, const KubectlRunner& kubectl,
                       std::ostream& out, std::ostream& err, TimePoint now) {
  if (args.empty() || args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
    (args.empty() ? err : out) << kPluginUsageText;
    return args.empty() ? kPluginUsage : kPluginOk;
  }
  const PluginFlags f = parse_flags(args);
  if (!f.error.empty()) {
    err << "kubectl commgate: " << f.error << "\n(kubectl commgate --help lists the flags)\n";
    return kPluginUsage;
  }
  const std::string command = f.positional.empty() ? "" : f.positional[0];
  if (command == "evaluate") return evaluate(f, kubectl, out, err);
  if (command == "explain") return explain(f, kubectl, out, err, now);
  if (command == "pools") return pools(f, kubectl, out, err, now);
  err << "kubectl commgate: unknown command \"" << command << "\"\n" << kPluginUsageText;
  return kPluginUsage;
}

}  // namespace commgate
