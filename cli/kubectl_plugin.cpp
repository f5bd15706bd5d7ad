#include "cli/kubectl_plugin.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <map>
#include <ostream>
#include <regex>
#include <sstream>

#include "cli/command_input.h"
#include "cli/evaluate_report.h"
#include "cli/manifest_yaml.h"
#include "core/advice.h"
#include "core/annotations.h"
#include "core/comm_profile.h"
#include "core/decision.h"
#include "core/field_errors.h"
#include "core/job_decision.h"
#include "core/quantity.h"
#include "core/significant_digits.h"
#include "core/training_job.h"

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
      --plot FILE.svg                    also write its scaling chart (SVG): step time
                                         per node count, speedup against linear, the
                                         policy's limit, the asked and admitted counts
  kubectl commgate pools                 the measured pools: link, age, and the policies
                                         for which each measurement is stale

Flags (passed to kubectl): --kubeconfig FILE, --context NAME, -n/--namespace NS,
  --request-timeout T, --as USER, --as-group GROUP, --as-uid UID
  -o, --output table|json|yaml           default table

Exit codes: 0 success (evaluate: it would run: admitted, downsized or admitted over
policy), 1 error (as kubectl: usage errors too, a --plot file that cannot be written,
and explain --plot with nothing to draw), 3 evaluate: it would be refused, 4 evaluate:
it would be suspended until its pool is measured (or has room).
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
  std::string plot;  // explain --plot FILE.svg
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
    } else if (flag.size() > 2 && flag[0] == '-' && flag[1] != '-' &&
               std::string("nof").find(flag[1]) != std::string::npos) {
      // A shorthand with its value attached, as kubectl (pflag) reads it: -ojson, -nml,
      // -o=yaml (the trial of 2026-12-06 typed -ojson).
      value = flag.substr(flag[2] == '=' ? 3 : 2);
      flag = flag.substr(0, 2);
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
    } else if (flag == "--context" || flag == "--kubeconfig" || flag == "--request-timeout" ||
               flag == "--as" || flag == "--as-group" || flag == "--as-uid") {
      // --as and its kin: kubectl impersonates (Impersonate-User and -Group headers) on
      // every call, exactly as `kubectl --as` does (the trial of 2026-12-06 was refused).
      if (take()) f.kubectl.insert(f.kubectl.end(), {flag, value});
    } else if (flag == "-o" || flag == "--output") {
      if (take()) {
        if (value != "table" && value != "json" && value != "yaml")
          f.error = flag + ": must be table, json or yaml, got \"" + value + "\"";
        f.output = value;
      }
    } else if (flag == "-f" || flag == "--filename") {
      if (take()) {
        // One file: a second -f was silently ignored (the trial of 2026-12-06).
        if (!f.filename.empty())
          f.error = flag + " \"" + value + "\": a second file (-f \"" + f.filename +
                    "\" came first); evaluate reads one TrainingJob: evaluate each file on "
                    "its own";
        f.filename = value;
      }
    } else if (flag == "--plot") {
      if (take()) {
        f.plot = value;
        if (value.empty()) f.error = "--plot: needs a file name (FILE.svg)";
      }
    } else if (flag.size() > 1 && flag[0] == '-') {
      f.error = "unknown flag \"" + args[i] + "\"";
    } else {
      f.positional.push_back(flag);
    }
    if (!f.error.empty()) break;
  }
  return f;
}

// The namespace kubectl works in: -n, else the kubeconfig context's, else "default".
std::string namespace_in_use(const PluginFlags& f, const KubectlRunner& kubectl) {
  for (size_t i = 0; i + 1 < f.kubectl.size(); ++i)
    if (f.kubectl[i] == "--namespace") return f.kubectl[i + 1];
  std::vector<std::string> view = {"config", "view", "--minify", "-o", "jsonpath={..namespace}"};
  view.insert(view.end(), f.kubectl.begin(), f.kubectl.end());
  const Captured r = kubectl(view);
  std::string ns = r.code == 0 ? r.out : "";
  while (!ns.empty() && std::isspace(static_cast<unsigned char>(ns.back()))) ns.pop_back();
  return ns.empty() ? "default" : ns;
}

struct KindAndName {
  std::string kind;
  std::string name;
};

// `explain tj NAME` or kubectl's `explain tj/NAME`; nullopt for any other shape.
std::optional<KindAndName> kind_and_name_of(const std::vector<std::string>& positional) {
  if (positional.size() == 3) return KindAndName{positional[1], positional[2]};
  if (positional.size() != 2) return std::nullopt;
  const std::string& both = positional[1];
  const size_t slash = both.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == both.size() ||
      both.find('/', slash + 1) != std::string::npos)
    return std::nullopt;
  return KindAndName{both.substr(0, slash), both.substr(slash + 1)};
}

bool is_trainingjob_kind(const std::string& kind) {
  static const std::vector<std::string> kKinds = {"tj", "trainingjob", "trainingjobs",
                                                  "trainingjobs.commgate.io", "TrainingJob"};
  return std::find(kKinds.begin(), kKinds.end(), kind) != kKinds.end();
}

// A namespace's edit or view role does not reach the cluster-scoped CommProfiles and
// CommPolicies: the trial of 2026-12-06 got a bare "Forbidden". The ClusterRole is the
// chart's <release>-policy-reader (charts/commgate/templates/researcher-rbac.yaml).
constexpr const char* kPolicyReaderHint =
    "Hint: CommProfiles and CommPolicies are cluster-scoped, and a namespace's edit or view "
    "role does not reach them. Ask a cluster admin to bind you the ClusterRole "
    "commgate-policy-reader (the chart's <release>-policy-reader), e.g.\n"
    "  kubectl create clusterrolebinding YOU-commgate-policy-reader "
    "--clusterrole=commgate-policy-reader --user=YOU\n"
    "or to add your group to the chart's rbac.policyReaderGroups (docs/researcher.md).\n";

bool is_forbidden(const Captured& r) {
  return r.code != 0 && r.err.find("(Forbidden)") != std::string::npos;
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

// The TrainingJob of the file `-f` names, read here so that a mistake in the file is named
// as one (the trial of 2026-12-06 read "the dry run failed" for a file that was not YAML,
// held two documents or another kind). nullopt, with `error` naming the file and what is
// wrong, when it is not exactly one TrainingJob.
std::optional<json> trainingjob_in_file(const std::string& path, std::string& error) {
  std::vector<json> documents;
  try {
    documents = read_manifests(path);
  } catch (const UsageError& e) {
    error = e.what();
    return std::nullopt;
  }
  if (documents.empty()) {
    error = path + ": holds no document (a TrainingJob manifest is expected)";
    return std::nullopt;
  }
  if (documents.size() > 1) {
    std::string kinds;
    for (size_t i = 0; i < documents.size(); ++i)
      kinds += std::string(i == 0 ? "" : ", ") + std::to_string(i + 1) + ": " +
               (kind_of(documents[i]).empty() ? "no kind" : kind_of(documents[i]));
    error = path + ": holds " + std::to_string(documents.size()) + " documents (" + kinds +
            "); evaluate reads one TrainingJob: put the one to evaluate in a file of its own";
    return std::nullopt;
  }
  const json& doc = documents.front();
  const std::string api_version = str(doc, "apiVersion");
  if (kind_of(doc) == "TrainingJob" && api_version != kApiVersion) {
    // Caught here, before the server is asked (the trial of 2026-12-06 wrote commgate.io/v1).
    error = path + ": apiVersion " +
            (api_version.empty() ? std::string("is missing") : "\"" + api_version + "\"") +
            ": a TrainingJob is apiVersion " + kApiVersion + " (write apiVersion: " + kApiVersion +
            ")";
    return std::nullopt;
  }
  if (kind_of(doc) != "TrainingJob") {
    error = path + ": is " +
            (kind_of(doc).empty() ? std::string("a document without a kind")
                                  : "kind \"" + kind_of(doc) + "\"" +
                                        (api_version.empty() ? "" : " of " + api_version)) +
            ", not a TrainingJob of commgate.io/v1alpha1 (what evaluate evaluates)";
    return std::nullopt;
  }
  return doc;
}

Captured dry_run_create(const std::string& file, const PluginFlags& f,
                        const KubectlRunner& kubectl) {
  std::vector<std::string> args = {"create", "--dry-run=server", "-o", "json", "-f", file};
  args.insert(args.end(), f.kubectl.begin(), f.kubectl.end());
  return kubectl(args);
}

// A TrainingJob of that name exists (the trial of 2026-12-06: AlreadyExists): the file is
// evaluated as a new submission under a generated name (metadata.generateName NAME-), in a
// temporary file; still a dry run, so nothing is created and the stored job is untouched.
Captured dry_run_under_generated_name(json doc, const PluginFlags& f,
                                      const KubectlRunner& kubectl) {
  json& meta = doc["metadata"];
  meta["generateName"] = str(meta, "name") + "-";
  meta.erase("name");
  const std::filesystem::path file =
      std::filesystem::temp_directory_path() /
      ("kubectl-commgate-" + std::to_string(::getpid()) + "-evaluate.json");
  write_text_file(file.string(), doc.dump());
  Captured r = dry_run_create(file.string(), f, kubectl);
  std::error_code ignored;
  std::filesystem::remove(file, ignored);
  return r;
}

int evaluate(const PluginFlags& f, const KubectlRunner& kubectl, std::ostream& out,
             std::ostream& err) {
  if (f.filename.empty()) {
    err << "kubectl commgate evaluate: -f FILE is required (the TrainingJob to evaluate; - for "
           "stdin)\n";
    return kPluginUsage;
  }
  // stdin is kubectl's to read: the file is checked by the server alone then.
  json submitted;
  if (f.filename != "-") {
    std::string error;
    const std::optional<json> doc = trainingjob_in_file(f.filename, error);
    if (!doc) {
      err << "kubectl commgate evaluate: " << error << "\n";
      return kPluginError;
    }
    submitted = *doc;
    // Where kubectl will put it: a refusal returns no object to read it from.
    if (str(member(submitted, "metadata"), "namespace").empty())
      submitted["metadata"]["namespace"] = namespace_in_use(f, kubectl);
  }
  Captured r = dry_run_create(f.filename, f, kubectl);
  std::string exists;
  if (r.code != 0 && r.err.find("(AlreadyExists)") != std::string::npos && submitted.is_object() &&
      !str(member(submitted, "metadata"), "name").empty()) {
    exists = str(member(submitted, "metadata"), "namespace") + "/" +
             str(member(submitted, "metadata"), "name");
    try {
      r = dry_run_under_generated_name(submitted, f, kubectl);
    } catch (const UsageError& e) {
      err << "kubectl commgate evaluate: TrainingJob " << exists
          << " exists, and the copy to evaluate under a generated name could not be written: "
          << e.what() << "\n";
      return kPluginError;
    }
  }
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
  json evaluation = evaluation_of(returned, refusal, warnings, submitted);
  if (!exists.empty()) {
    evaluation["job"] = exists;
    evaluation["exists"] = true;
    evaluation["note"] = "TrainingJob " + exists +
                         " already exists: this evaluates the file as a new submission (a dry "
                         "run under a generated name); the existing job and its decision are "
                         "unchanged (kubectl commgate explain tj " +
                         str(member(submitted, "metadata"), "name") + " shows them)";
  }
  out << (f.output == "table" ? evaluation_table(evaluation) : written(evaluation, f.output));
  const std::string action = str(member(evaluation, "decision"), "action");
  if (action == "Deny") return kPluginWouldDeny;
  if (action == "Gate") return kPluginWouldGate;
  return kPluginOk;
}

// The chart's pool line (issue #24 item 12): the nodes matching the job's nodeSelector, as
// kubectl lists them. Not drawn, and a note says why, when they cannot be listed (a
// researcher's RBAC often stops at nodes) or none matches.
void add_pool_size(ScalingChart& chart, const json& node_selector, const PluginFlags& f,
                   const KubectlRunner& kubectl) {
  std::vector<std::string> args = {"get", "nodes", "-o", "name"};
  const std::string selector = selector_text(node_selector);
  if (node_selector.is_object() && !node_selector.empty())
    args.insert(args.end(), {"-l", selector});
  args.insert(args.end(), f.kubectl.begin(), f.kubectl.end());
  const Captured r = kubectl(args);
  if (r.code != 0) {
    chart.notes.push_back("The pool's size is not drawn: its nodes could not be listed (" +
                          r.err.substr(0, r.err.find('\n')) + ").");
    return;
  }
  int nodes = 0;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);)
    if (!line.empty()) ++nodes;
  if (nodes == 0) {
    chart.notes.push_back("No node matches nodeSelector " + selector +
                          " now: the pool has no "
                          "nodes to run on.");
    return;
  }
  chart.pool_nodes = nodes;
  chart.notes.push_back("Pool: " + std::to_string(nodes) + " node" + (nodes == 1 ? "" : "s") +
                        " match nodeSelector " + selector + " now (kubectl get nodes -l)" +
                        (nodes >= chart.points.back().nodes ? ": every count drawn fits." : "."));
}

// The spec of the CommPolicy a stored decision names, for explain's chart: the built-in
// default as it is, a CommPolicy read through kubectl. nullopt, with why in `note`, when
// it cannot be read (RBAC, deleted since) or does not parse.
std::optional<CommPolicySpec> policy_of_decision(const std::string& name, const PluginFlags& f,
                                                 const KubectlRunner& kubectl, std::string& note) {
  if (name.empty()) {
    note = "the decision names no policy: its limit is not drawn";
    return std::nullopt;
  }
  if (name == kBuiltinPolicyName) return default_comm_policy().spec;
  std::vector<std::string> get = {"get", "commpolicies.commgate.io", name, "-o", "json"};
  get.insert(get.end(), f.kubectl.begin(), f.kubectl.end());
  const Captured r = kubectl(get);
  std::string why;
  if (r.code == 0) {
    try {
      return parse_comm_policy(parsed_or_null(r.out)).spec;
    } catch (const ValidationError& e) {
      why = e.errors().all().empty() ? e.what() : e.errors().all().front().to_string();
    } catch (const std::exception& e) {  // not a JSON object at all
      why = e.what();
    }
  } else {
    why = r.err.substr(0, r.err.find('\n'));
  }
  note = "CommPolicy " + name + " could not be read (" + why + "): its limit is not drawn";
  return std::nullopt;
}

int explain(const PluginFlags& f, const KubectlRunner& kubectl, std::ostream& out,
            std::ostream& err, TimePoint now) {
  const std::optional<KindAndName> target = kind_and_name_of(f.positional);
  if (!target || !is_trainingjob_kind(target->kind)) {
    err << "kubectl commgate explain: usage: kubectl commgate explain tj NAME (or tj/NAME) "
           "[-n NAMESPACE]\n";
    return kPluginUsage;
  }
  const std::string& name = target->name;
  std::vector<std::string> get = {"get", "trainingjobs.commgate.io", name, "-o", "json"};
  get.insert(get.end(), f.kubectl.begin(), f.kubectl.end());
  const Captured job = kubectl(get);
  if (job.code != 0 && job.err.find("(NotFound)") != std::string::npos) {
    // kubectl's own words name no namespace (the trial of 2026-12-06 looked in the wrong one).
    err << "kubectl commgate explain: TrainingJob \"" << name << "\" not found in namespace \""
        << namespace_in_use(f, kubectl) << "\" (another namespace: -n NAMESPACE)\n";
    return kPluginError;
  }
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
  // The deciding policy: each prediction's pass/over, and the chart's limit.
  const json& decision = member(member(tj, "status"), "decision");
  std::string note;
  const auto policy = decision.is_object()
                          ? policy_of_decision(str(decision, "policy"), f, kubectl, note)
                          : std::nullopt;
  const json explanation =
      explanation_of(tj, events.code == 0 ? parsed_or_null(events.out) : json(), now, policy);
  bool nothing_drawn = false;
  if (!f.plot.empty()) {
    // Before stdout: a file that cannot be written is a usage error, with nothing printed.
    ScalingChart chart = scaling_chart_of_trainingjob(tj, policy, note);
    if (!chart.points.empty())
      add_pool_size(chart, member(member(tj, "spec"), "nodeSelector"), f, kubectl);
    if (chart.points.empty()) {
      // An error, after the explanation (the trial of 2026-12-06 read exit 0 as a chart).
      nothing_drawn = true;
      err << "kubectl commgate explain: --plot: no chart written to " << f.plot << ": " << chart.job
          << " has no predictions to draw ("
          << (decision.is_object() ? str(decision, "action") + ", " + str(decision, "reason") +
                                         "): " + str(decision, "message")
                                   : std::string("not decided yet)"))
          << "\n";
    } else {
      try {
        write_text_file(f.plot, scaling_chart_svg(chart));
      } catch (const UsageError& e) {
        err << "kubectl commgate explain: --plot: " << e.what() << "\n";
        return kPluginUsage;
      }
      if (!policy) err << "kubectl commgate explain: --plot: " << note << "\n";
      err << "kubectl commgate explain: wrote the scaling chart of " << chart.job << " to "
          << f.plot << "\n";
    }
  }
  out << (f.output == "table" ? explanation_text(explanation) : written(explanation, f.output));
  return nothing_drawn ? kPluginError : kPluginOk;
}

int pools(const PluginFlags& f, const KubectlRunner& kubectl, std::ostream& out, std::ostream& err,
          TimePoint now) {
  std::vector<std::string> profiles_args = {"get", "commprofiles.commgate.io", "-o", "json"};
  profiles_args.insert(profiles_args.end(), f.kubectl.begin(), f.kubectl.end());
  const Captured profiles = kubectl(profiles_args);
  if (profiles.code != 0) {
    const int code = kubectl_failed("listing CommProfiles", profiles, err);
    if (is_forbidden(profiles)) err << kPolicyReaderHint;
    return code;
  }
  std::vector<std::string> policies_args = {"get", "commpolicies.commgate.io", "-o", "json"};
  policies_args.insert(policies_args.end(), f.kubectl.begin(), f.kubectl.end());
  const Captured policies = kubectl(policies_args);
  if (is_forbidden(policies))
    err << "kubectl commgate: the CommPolicies could not be listed (Forbidden): STALE FOR "
           "cannot be told.\n"
        << kPolicyReaderHint;
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

std::optional<json> dry_run_decision_of(const std::vector<std::string>& warnings) {
  // webhook/mutate.cpp dry_run_decision_warning writes it. The regex reads only the head:
  // libstdc++'s regex recurses once per character, and the message is the webhook's.
  static const std::regex kHead(
      R"re(commgate: dry run: (\w+) \(([^)]{0,128})\), (\d{1,6}) nodes requested, (\d{1,6}) admitted, )re"
      R"re(CommPolicy "([^"]{0,253})": )re");
  for (const std::string& w : warnings) {
    std::smatch m;
    if (!std::regex_search(w, m, kHead, std::regex_constants::match_continuous)) continue;
    return json{{"decision", m[1].str()},
                {"reason", m[2].str()},
                {"requestedNodes", std::stoi(m[3].str())},
                {"admittedNodes", std::stoi(m[4].str())},
                {"policy", m[5].str()},
                {"message", w.substr(static_cast<std::size_t>(m.length(0)))}};
  }
  return std::nullopt;
}

namespace {

// An advice line of the webhook ("commgate: to run 8 nodes: The link: ..."), as
// status.decision.advice holds one: {kind, text}, the kind read from the text's head
// (core/advice.h writes each kind's head).
json advice_of_warning(const std::string& warning) {
  std::string text = warning.substr(std::string("commgate: ").size());
  if (text.rfind("to run ", 0) == 0 && text.find(": ") != std::string::npos)
    text = text.substr(text.find(": ") + 2);
  std::string kind;
  if (text.rfind("The link: ", 0) == 0)
    kind = text.find(" would pass with ") != std::string::npos ? advice_kind::kLink
                                                               : advice_kind::kLinkRate;
  else if (text.rfind("Compression: ", 0) == 0)
    kind = advice_kind::kCompression;
  else if (text.rfind("A larger batch: ", 0) == 0)
    kind = advice_kind::kBatch;
  else if (text.rfind("Fewer nodes: ", 0) == 0)
    kind = advice_kind::kLargestCount;
  return {{"kind", kind}, {"text", text}};
}

}  // namespace

json evaluation_of(const json& returned, const std::string& refusal,
                   const std::vector<std::string>& warnings, const json& submitted) {
  json advice = json::array();
  for (const std::string& w : warnings)
    if (w.rfind("commgate: to run ", 0) == 0) advice.push_back(advice_of_warning(w));
  const std::optional<json> told = dry_run_decision_of(warnings);
  // A refusal returns no object: the job is named from the file, its numbers from the
  // webhook's dry-run warning (or the file's request when the webhook sent none).
  const json& object = refusal.empty() ? returned : submitted;
  const json& meta = member(object, "metadata");
  const std::string name = str(meta, "name", str(meta, "generateName"));
  const std::string job = name.empty() ? "-" : str(meta, "namespace", "default") + "/" + name;
  json d;
  if (!refusal.empty()) {
    d = {{"action", "Deny"},
         {"reason", told ? (*told)["reason"] : json("")},
         {"message", refusal},
         {"policy", told ? (*told)["policy"] : json("")},
         {"requestedNodes",
          told ? (*told)["requestedNodes"] : member(member(submitted, "spec"), "numNodes")},
         {"admittedNodes", 0}};
  } else {
    const json& annotations = member(meta, "annotations");
    const json record = parsed_or_null(str(annotations, annotation::kDecisionRecord));
    d["action"] = str(annotations, annotation::kDecision, "none");
    d["reason"] = str(annotations, annotation::kReason);
    d["message"] = record.is_object() ? record.value("message", "") : "";
    // The record keeps a message for Gate and Deny only: the dry-run warning has every one.
    if (told && d["message"] == "") d["message"] = (*told)["message"];
    d["policy"] = record.is_object() && record.contains("policy")
                      ? json(str(member(record, "policy"), "name"))
                      : (told ? (*told)["policy"] : json(""));
    d["requestedNodes"] = record.is_object() ? record.value("requestedNodes", json())
                                             : json(str(annotations, annotation::kRequestedNodes));
    d["admittedNodes"] = member(member(returned, "spec"), "numNodes");
  }
  d["predictions"] = json::array();  // a dry run is told none
  d["advice"] = advice;
  json e = decision_document(job, d, json());
  e["dryRun"] = true;
  e["warnings"] = warnings;
  e["suspended"] = refusal.empty() && member(member(returned, "spec"), "suspend") == json(true);
  return e;
}

// What a decision admits, as a table cell: a Gate admits nothing until it is decided
// again (its admittedNodes is the count it would run at, not one it runs at), and a Deny
// nothing at all.
std::string admitted_cell(const std::string& action, const std::string& admitted) {
  if (action == "Gate") return "none yet";
  if (action == "Deny") return "none";
  return admitted;
}

namespace {

// The first line: the verdict in plain words (over policy, downsized from N to M,
// denied), then what the webhook would do, as a sentence about the future: evaluate
// submits nothing (the trial of 2026-12-06 read "lowered from 4 to 1" as done to its
// job, and later missed that a downsized job was over policy at all).
std::string would_text(const json& e) {
  const json& d = member(e, "decision");
  const std::string action = str(d, "action");
  const std::string reason = str(d, "reason");
  const std::string job = str(e, "job", "this TrainingJob");
  const std::string requested = str(d, "requestedNodes", "?");
  const std::string admitted = str(d, "admittedNodes", "?");
  const bool over = reason.rfind("OverPolicy", 0) == 0 || reason == reason::kNoCountMeetsPolicy;
  const std::string why = reason.empty() ? "" : " (" + reason + ")";
  std::string verdict;
  std::string what;
  if (action == "Deny") {
    verdict = over ? "over policy, denied" : "denied";
    what = "refuse " + job;
  } else if (action == "Downsize") {
    verdict = std::string(over ? "over policy, " : "") + "downsized from " + requested + " to " +
              admitted + (admitted == "1" ? " node" : " nodes");
    what = "lower spec.numNodes of " + job + " from " + requested + " to " + admitted +
           " and admit it";
  } else if (action == "Gate") {
    verdict = "not admitted yet, suspended";
    what = "admit " + job + " suspended: it would not run until commgate decides it again";
  } else if (action == "Warn") {
    verdict = "over policy, admitted with " + requested + " nodes anyway";
    what =
        "admit " + job + " with " + requested + " nodes over the policy (enforcementAction warn)";
  } else if (action == "Admit" && over) {
    verdict = "over policy, admitted with " + requested +
              " nodes only because the policy's enforcementAction is dryrun";
    what = "admit " + job + " with " + requested + " nodes as asked";
  } else if (action == "Admit") {
    verdict = "admitted with " + requested + " nodes as asked";
    what = "admit " + job + " with " + requested + " nodes as asked";
  } else {
    verdict = "decided " + action;
    what = "decide " + job + " as " + action;
  }
  return action + ": " + verdict + why + "; if submitted now, the admission webhook would " + what +
         ".\n";
}

// A warning that only restates the decision shown above it (the trial of 2026-12-06 read
// one message three or four times): the dry-run line itself, the advice (listed apart),
// and the verdict's own warning (a downsize, a gate, the message repeated).
bool restates_decision(const std::string& warning, const std::string& message) {
  for (const char* prefix : {"commgate: dry run: ", "commgate: to run ",
                             "commgate: spec.numNodes lowered from ", "commgate: suspended "})
    if (warning.rfind(prefix, 0) == 0) return true;
  // The message alone (a Warn; an Admit under enforcementAction dryrun); a warning that
  // quotes it and adds more (an exemption's "without the exemption ...") stays.
  return !message.empty() &&
         (warning == "commgate: " + message || warning == "commgate (dry run): " + message);
}

}  // namespace

std::string evaluation_table(const json& e) {
  const json& d = member(e, "decision");
  const std::string action = str(d, "action");
  std::string out = would_text(e);
  if (!str(e, "note").empty()) out += "Note: " + str(e, "note") + ".\n";
  out += "\n" +
         table_text(
             {{"TRAININGJOB", "DECISION", "REASON", "REQUESTED", "ADMITTED", "POLICY"},
              {str(e, "job", "-"), action, str(d, "reason", "-").empty() ? "-" : str(d, "reason"),
               str(d, "requestedNodes", "-"), admitted_cell(action, str(d, "admittedNodes", "-")),
               str(e, "policy").empty() ? "-" : str(e, "policy")}});
  const std::string message = str(d, "message");
  if (!message.empty()) out += "\nWhy: " + message + "\n";
  const json& advice = member(d, "advice");
  if (advice.is_array() && !advice.empty()) {
    out += "\nAdvice (what would make " + str(d, "requestedNodes", "the requested") +
           " nodes pass; the verdict above stands):\n";
    for (const auto& a : advice) out += "  - " + str(a, "text") + "\n";
  }
  std::vector<std::string> other;
  const json& warnings = member(e, "warnings");
  for (const auto& w : warnings.is_array() ? warnings : json::array())
    if (w.is_string() && !restates_decision(w.get<std::string>(), message))
      other.push_back(w.get<std::string>());
  if (!other.empty()) {
    out += "\nWarnings from the admission webhook:\n";
    for (const auto& w : other) out += "  " + w + "\n";
  }
  out += "\n(a server-side dry run through the admission webhook: nothing was created)\n";
  return out;
}

namespace {

double stored_number(const json& j, const char* key) {
  const json& v = member(j, key);
  return v.is_number() && std::isfinite(v.get<double>()) ? v.get<double>() : 0;
}

// A row of status.decision.predictions (milliseconds, as core's decision_to_json writes it).
StepPrediction prediction_of_row(const json& row) {
  StepPrediction p;
  const json& n = member(row, "nodes");
  p.nodes = n.is_number_integer() ? n.get<int>() : 0;
  p.step_s = stored_number(row, "stepTimeMs") / 1e3;
  p.compute_s = stored_number(row, "computeMs") / 1e3;
  p.allreduce_s = stored_number(row, "allReduceMs") / 1e3;
  p.exposed_comm_s = stored_number(row, "exposedCommMs") / 1e3;
  p.comm_share = stored_number(row, "commShare");
  p.speedup = stored_number(row, "speedup");
  p.scaling_efficiency = stored_number(row, "scalingEfficiency");
  p.measured = member(row, "measured") == json(true);
  return p;
}

}  // namespace

json explanation_of(const json& tj, const json& events, TimePoint now,
                    const std::optional<CommPolicySpec>& policy) {
  const json& meta = member(tj, "metadata");
  const json& status = member(tj, "status");
  json decision = member(status, "decision");
  if (policy && decision.is_object() && member(decision, "predictions").is_array()) {
    // Each row judged as `commgate evaluate` judges it: pass, over, or past what the
    // measurement may decide.
    int probed = static_cast<int>(stored_number(decision, "nodesProbed"));
    if (probed <= 0)
      probed = static_cast<int>(stored_number(member(status, "measurement"), "nodesProbed"));
    const int64_t decided =
        probed > 0 ? counts_decided(*policy, probed) : std::numeric_limits<int64_t>::max();
    for (json& row : decision["predictions"])
      if (row.is_object())
        row["policy"] = prediction_verdict(prediction_of_row(row), *policy, decided);
  }
  json x = decision_document(str(meta, "namespace") + "/" + str(meta, "name"), decision,
                             member(status, "measurement"));
  x["phase"] = str(status, "phase", "Pending");
  x["conditions"] =
      member(status, "conditions").is_array() ? member(status, "conditions") : json::array();
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

namespace {

// A condition's or an Event's message with the decision's message, printed above the
// tables, cut out (the trial of 2026-12-06 read one message three times: below the
// decision, in the Admitted condition and in the decision's Event).
std::string said_above(const std::string& text, const std::string& message) {
  if (message.empty()) return text;
  const size_t at = text.find(message);
  if (at == std::string::npos) return text;
  return text.substr(0, at) + "(the decision's message, above)" + text.substr(at + message.size());
}

}  // namespace

std::string explanation_text(const json& x) {
  std::string out;
  const json& d = member(x, "decision");
  std::vector<std::vector<std::string>> head = {{"TrainingJob:", str(x, "job")},
                                                {"Phase:", x.value("phase", "")}};
  if (d.is_object()) {
    head.push_back({"Decision:", str(d, "action") + " (" + str(d, "reason") + "), " +
                                     str(d, "requestedNodes") + " nodes asked, " +
                                     admitted_cell(str(d, "action"), str(d, "admittedNodes")) +
                                     " admitted"});
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
  const std::string message = d.is_object() ? str(d, "message") : "";
  if (!message.empty()) out += "\n" + message + "\n";
  if (d.is_object() && member(d, "predictions").is_array() && !d["predictions"].empty()) {
    // The rows as `commgate evaluate` prints them (cli/evaluate_report.h predictions_table).
    const std::string asked = str(d, "requestedNodes");
    const std::string given =
        str(d, "action") == "Gate" || str(d, "action") == "Deny" ? "" : str(d, "admittedNodes");
    std::vector<PredictionRow> rows;
    for (const json& p : d["predictions"]) {
      PredictionRow row{prediction_of_row(p), str(p, "policy", "-"), ""};
      const std::string n = str(p, "nodes");
      if (p.value("measured", false)) row.notes += "  (measured)";
      if (n == asked) row.notes += "  <- requested";
      if (n == given && given != asked) row.notes += "  <- admitted";
      rows.push_back(row);
    }
    out += "\nPredictions:\n" + predictions_table(rows, "  ");
  }
  if (d.is_object() && member(d, "advice").is_array() && !d["advice"].empty()) {
    out += "\nAdvice:\n";
    const bool fit_poor = member(member(x, "measurement"), "fitPoor") == json(true);
    for (const json& a : d["advice"])
      out += "  - " + advice_line(str(a, "kind"), str(a, "text"), fit_poor) + "\n";
  }
  // member(): a key explanation_of always writes, read without const operator[]'s
  // assertion (undefined behaviour in a release build) when a caller's object lacks it.
  const json& conditions = member(x, "conditions");
  if (conditions.is_array() && !conditions.empty()) {
    std::vector<std::vector<std::string>> rows = {{"TYPE", "STATUS", "REASON", "MESSAGE"}};
    for (const json& c : conditions)
      rows.push_back({str(c, "type"), str(c, "status"), str(c, "reason"),
                      said_above(str(c, "message"), message)});
    out += "\nConditions:\n" + table_text(rows, "  ");
  }
  const json& events = member(x, "events");
  if (!events.is_array()) {
    out += "\nEvents: (could not be listed)\n";
  } else if (events.empty()) {
    out += "\nEvents: none\n";
  } else {
    std::vector<std::vector<std::string>> rows = {{"AGE", "TYPE", "REASON", "MESSAGE"}};
    for (const json& e : events)
      rows.push_back({str(e, "age"), str(e, "type"), str(e, "reason"),
                      said_above(str(e, "message"), message)});
    out += "\nEvents:\n" + table_text(rows, "  ");
  }
  return out;
}

namespace {

double number_of(const json& j, const char* key) {
  const json& v = member(j, key);
  return v.is_number() && std::isfinite(v.get<double>()) ? v.get<double>() : 0;
}

// A node count as stored, within [0, kMaxNodes] whatever the object holds.
int count_of(const json& j, const char* key) {
  return static_cast<int>(std::clamp(number_of(j, key), 0.0, static_cast<double>(kMaxNodes)));
}

}  // namespace

ScalingChart scaling_chart_of_trainingjob(const json& tj,
                                          const std::optional<CommPolicySpec>& policy,
                                          const std::string& policy_note) {
  const json& meta = member(tj, "metadata");
  const json& spec = member(tj, "spec");
  const json& status = member(tj, "status");
  const json& d = member(status, "decision");
  const json& m = member(status, "measurement");
  ScalingChart c;
  c.job = str(meta, "namespace", "default") + "/" + str(meta, "name");
  std::map<std::string, std::string> selector;
  if (const json& s = member(spec, "nodeSelector"); s.is_object())
    for (const auto& [k, v] : s.items())
      selector[k] = v.is_string() ? v.get<std::string>() : v.dump();
  c.pool = pool_name(selector);
  c.node_selector = format_node_selector(selector);
  if (m.is_object()) {
    const double busbw = number_of(m, "busbwGBps") * 1e9;
    std::string transport = str(m, "backend", "?");
    if (!str(m, "transport").empty() && str(m, "transport") != "unknown")
      transport += " over " + str(m, "transport");
    c.link_short = format_gbps(busbw) + " all-reduce busbw";
    c.link = "all-reduce busbw " + format_gbps(busbw) + " (" + transport + ", " +
             str(m, "nodesProbed", "?") + " nodes probed), latency " + str(m, "latencyUs", "?") +
             " us";
    const json& correction = member(d, "correction");
    if (member(correction, "applied") == json(true) && number_of(correction, "busbwFactor") > 0) {
      // A status written before the overlap was calibrated has none: full overlap.
      const double overlap =
          member(correction, "overlap").is_number() ? number_of(correction, "overlap") : 1;
      c.link += calibration_note(busbw, number_of(correction, "busbwFactor"), overlap,
                                 number_of(correction, "stepOverheadMs") / 1e3);
    } else if (member(correction, "applied") == json(false)) {
      c.link += kUncalibratedNote;
    }
  } else {
    c.link = "not measured";
  }
  const std::string policy_name = str(d, "policy");
  c.policy = policy_name.empty() ? "policy" : policy_label(policy_name);
  if (policy) {
    c.max_comm_share = policy->max_comm_share;
    c.min_scaling_efficiency = policy->min_scaling_efficiency;
    c.max_extrapolation = std::max(1, policy->max_extrapolation);
  }
  c.action = str(d, "action");
  c.reason = str(d, "reason");
  c.requested_nodes = count_of(d, "requestedNodes");
  c.admitted_nodes = count_of(d, "admittedNodes");
  c.nodes_probed =
      count_of(d, "nodesProbed") > 0 ? count_of(d, "nodesProbed") : count_of(m, "nodesProbed");
  for (const json& p : member(d, "predictions")) {
    const json& n = member(p, "nodes");
    if (!n.is_number_integer() || n.get<int64_t>() < 1 || n.get<int64_t>() > kMaxNodes) continue;
    ScalingPoint s;
    s.nodes = n.get<int>();
    s.compute_ms = number_of(p, "computeMs");
    s.exposed_comm_ms = number_of(p, "exposedCommMs");
    s.step_ms = number_of(p, "stepTimeMs");
    s.comm_share = number_of(p, "commShare");
    s.speedup = number_of(p, "speedup");
    s.efficiency = number_of(p, "scalingEfficiency");
    s.measured = member(p, "measured") == json(true);
    if (policy) {
      StepPrediction as_decided;
      as_decided.comm_share = s.comm_share;
      as_decided.scaling_efficiency = s.efficiency;
      s.beyond_max_extrapolation =
          c.nodes_probed > 0 && s.nodes > counts_decided(*policy, c.nodes_probed);
      // Past maxExtrapolation the policy judges nothing (as commgate evaluate's rows).
      if (!s.beyond_max_extrapolation) s.within_policy = meets_policy(as_decided, *policy);
    }
    c.points.push_back(s);
  }
  std::sort(c.points.begin(), c.points.end(),
            [](const ScalingPoint& a, const ScalingPoint& b) { return a.nodes < b.nodes; });
  c.points.erase(
      std::unique(c.points.begin(), c.points.end(),
                  [](const ScalingPoint& a, const ScalingPoint& b) { return a.nodes == b.nodes; }),
      c.points.end());
  if (c.points.empty()) {
    c.notes.push_back("No prediction to draw: " + str(d, "message", "not decided yet"));
    return c;
  }
  c.notes.push_back(
      "Counts: those the decision stored (status.decision.predictions, 1 to the request); "
      "commgate evaluate --plot draws up to twice the request.");
  if (std::any_of(c.points.begin(), c.points.end(),
                  [](const ScalingPoint& p) { return p.beyond_max_extrapolation; }))
    c.notes.push_back("Hatched: past maxExtrapolation " + std::to_string(c.max_extrapolation) +
                      " x the " + format_nodes(c.nodes_probed) +
                      " probed; the policy decides none of these counts from this measurement.");
  if (!policy_note.empty()) c.notes.push_back("Policy: " + policy_note + ".");
  if (m.is_object())
    c.notes.push_back("Measurement: " + str(m, "source", "?") + " (link measured at " +
                      str(m, "probeTime", "?") + "), as status.measurement records it.");
  return c;
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
      // The rated speed of the probed interface (core/link_rate.h): null where no node
      // reported one (a pod's veth reports none).
      const json& links = member(status, "links");
      const double rate = links.is_object() ? links.value("rateBitsPerSecond", 0.0) : 0.0;
      row["linkRateGbitps"] = rate > 0 ? json(rate / 1e9) : json();
      row["infinibandPresent"] = links.is_object() && links.value("infinibandPresent", false);
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

// "25 Gbit/s", "-" where no node reported a rate; "+IB" when a node has InfiniBand.
std::string link_rate_text(const json& pool) {
  const json& rate = member(pool, "linkRateGbitps");
  std::string text = rate.is_number() ? format_count(rate.get<double>()) + " Gbit/s" : "-";
  if (pool.value("infinibandPresent", false)) text += " +IB";
  return text;
}

std::string pools_table(const json& doc) {
  std::vector<std::vector<std::string>> rows = {{"POOL", "NODESELECTOR", "BUSBW(GB/s)",
                                                 "LATENCY(us)", "PROBED", "TRANSPORT", "LINK RATE",
                                                 "MODELS", "AGE", "STALE FOR"}};
  for (const json& p : doc["pools"]) {
    if (!p.value("measured", false)) {
      rows.push_back({str(p, "pool"), str(p, "nodeSelector"), "-", "-", "-", "-", "-",
                      str(p, "models"), "-", "not measured yet"});
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
                    str(p, "backend") + "/" + str(p, "transport"), link_rate_text(p),
                    str(p, "models"), str(p, "age"), stale});
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
  // An argument no command takes is named, not ignored (the trial of 2026-12-06): explain
  // takes `tj NAME` or `tj/NAME`, the others nothing.
  if (command == "evaluate" || command == "pools" || command == "explain") {
    size_t takes = 1;
    if (command == "explain")
      takes = f.positional.size() > 1 && f.positional[1].find('/') != std::string::npos ? 2 : 3;
    if (f.positional.size() > takes) {
      err << "kubectl commgate " << command << ": unexpected argument \"" << f.positional[takes]
          << "\""
          << (command == "explain"    ? " (explain takes tj NAME or tj/NAME)"
              : command == "evaluate" ? " (the file goes with -f FILE)"
                                      : " (pools takes no argument)")
          << "\n(kubectl commgate --help lists the commands and flags)\n";
      return kPluginUsage;
    }
  }
  if (!f.plot.empty() && command != "explain") {
    err << "kubectl commgate: --plot draws a TrainingJob's chart: use it with explain tj NAME "
           "(commgate evaluate --plot draws one from a file)\n";
    return kPluginUsage;
  }
  if (command == "evaluate") return evaluate(f, kubectl, out, err);
  if (command == "explain") return explain(f, kubectl, out, err, now);
  if (command == "pools") return pools(f, kubectl, out, err, now);
  err << "kubectl commgate: unknown command \"" << command << "\"\n" << kPluginUsageText;
  return kPluginUsage;
}

}  // namespace commgate
