#include "cli/evaluate_command.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <sstream>

#include "cli/command_input.h"
#include "cli/evaluate_report.h"
#include "cli/local_probe.h"
#include "cli/manifest_yaml.h"
#include "core/comm_profile.h"
#include "core/decision.h"
#include "core/field_errors.h"
#include "core/job_decision.h"
#include "core/policy_selection.h"
#include "core/snapshot.h"
#include "core/yaml_json.h"

namespace commgate {
namespace {

constexpr const char* kUsage = R"(Usage: commgate evaluate -f JOB.yaml [options]

Predicts the communication share of a multi-node DDP TrainingJob for every node
count up to spec.numNodes, and prints the decision commgate's admission gate would
take under the policy.

Options:
  -f, --filename FILE     TrainingJob manifest (YAML or JSON; several documents
                          allowed; a CommPolicy among them is used as the policy)
      --policy FILE       CommPolicy manifest (default: the embedded default policy:
                          maxCommShare 0.30, downsize, gate, measurementTTL 24h)
      --policy-dir DIR    choose each job's policy as the cluster would, from the
                          CommPolicy documents in DIR's *.yaml, *.yml and *.json files
                          and the labels of the Namespace documents there (kubectl get
                          commpolicies,namespaces -o yaml > DIR/cluster.yaml)
      --measurement FILE  a commgate-probe result (JSON) or a CommProfile; without
                          it, commgate-probe runs here (--local-ranks ranks)
      --probe PATH        the commgate-probe binary (default: next to commgate, $PATH)
      --local-ranks N     ranks for the local probe (default 2)
      --now TIME          RFC 3339 time to judge measurement age against (default:
                          now; for a --measurement file, the file's own time)
      --user NAME         requesting user, for the policy's exemptions
      --group NAME        requesting user's group (repeatable)
  -o, --output FORMAT     table (default), json or yaml
      --plot FILE.svg     also write the job's scaling chart (SVG): step time per
                          node count (compute and exposed communication), speedup
                          against linear, the policy's limit, the requested,
                          admitted and probed counts; nothing is written when no
                          measurement decides the job (stderr says why)
  -h, --help              this help

Exit codes: 0 admitted (admit, downsize, warn), 1 denied, 2 bad input (also a
--plot file that cannot be written), 3 no measurement (the local probe is missing
or failed), 4 would wait (gate).
)";

struct Options {
  std::vector<std::string> job_files;
  std::string policy_file;
  std::string policy_dir;
  std::string measurement_file;
  std::string output = "table";
  std::string plot;  // --plot FILE.svg
  std::string now;
  LocalProbeOptions probe;
  Requester requester;
  bool help = false;
};

Options parse_args(const std::vector<std::string>& args) {
  Options o;
  for (size_t i = 0; i < args.size(); ++i) {
    // "--flag value", "--flag=value", and a shorthand with its value attached as kubectl
    // (pflag) reads it: -ojson, -o=json, -fjob.yaml (the plugin takes the same forms).
    const std::string& arg = args[i];
    size_t value_at = std::string::npos;
    size_t flag_end = std::string::npos;
    if (arg.rfind("--", 0) == 0 && arg.find('=') != std::string::npos) {
      flag_end = arg.find('=');
      value_at = flag_end + 1;
    } else if (arg.size() > 2 && arg[0] == '-' && (arg[1] == 'o' || arg[1] == 'f')) {
      flag_end = 2;
      value_at = arg[2] == '=' ? 3 : 2;
    }
    const std::string flag = arg.substr(0, flag_end);
    auto value = [&]() -> std::string {
      if (value_at != std::string::npos) return arg.substr(value_at);
      if (i + 1 >= args.size()) throw UsageError(flag + " needs a value");
      return args[++i];
    };
    if (flag == "-h" || flag == "--help") {
      o.help = true;
    } else if (flag == "-f" || flag == "--filename") {
      o.job_files.push_back(value());
    } else if (flag == "--policy") {
      o.policy_file = value();
    } else if (flag == "--policy-dir") {
      o.policy_dir = value();
    } else if (flag == "--measurement") {
      o.measurement_file = value();
    } else if (flag == "--probe") {
      o.probe.probe_path = value();
    } else if (flag == "--now") {
      o.now = value();
    } else if (flag == "--user") {
      o.requester.username = value();
    } else if (flag == "--group") {
      o.requester.groups.push_back(value());
    } else if (flag == "--local-ranks") {
      std::string v = value();
      try {
        size_t used = 0;
        o.probe.ranks = std::stoi(v, &used);
        if (used != v.size() || o.probe.ranks < 2 || o.probe.ranks > 16)
          throw std::invalid_argument(v);
      } catch (const std::exception&) {
        throw UsageError("--local-ranks must be an integer from 2 to 16, got \"" + v + "\"");
      }
    } else if (flag == "--plot") {
      o.plot = value();
      if (o.plot.empty()) throw UsageError("--plot needs a file name (FILE.svg)");
    } else if (flag == "-o" || flag == "--output") {
      o.output = value();
      if (o.output != "table" && o.output != "json" && o.output != "yaml") {
        throw UsageError("--output must be table, json or yaml, got \"" + o.output + "\"");
      }
    } else {
      throw UsageError("unknown argument \"" + arg + "\"");
    }
  }
  if (!o.help && o.job_files.empty()) throw UsageError("-f JOB.yaml is required");
  if (!o.policy_dir.empty() && !o.policy_file.empty())
    throw UsageError("--policy and --policy-dir choose the policy in two ways: give one");
  return o;
}

// A ValidationError rendered with the file name in front of every field path.
[[noreturn]] void rethrow_with_file(const std::string& path, const std::string& kind,
                                    const ValidationError& e) {
  std::string msg = path + ": invalid " + kind + ":";
  for (const auto& fe : e.errors().all()) msg += "\n  " + fe.to_string();
  throw UsageError(msg);
}

// The cluster decides a job from the CommProfile of the pool its nodeSelector names; a
// profile of another pool would give a decision the cluster never makes.
void require_same_pool(const CommProfile& profile, const std::string& file,
                       const std::vector<TrainingJob>& jobs) {
  for (const auto& job : jobs) {
    if (job.spec.node_selector == profile.node_selector) continue;
    const std::string job_pool = pool_name(job.spec.node_selector);
    throw UsageError(file + " measures the pool " + format_node_selector(profile.node_selector) +
                     " (CommProfile " + profile.metadata.name + "), but TrainingJob " +
                     job.metadata.namespace_ + "/" + job.metadata.name + " selects " +
                     format_node_selector(job.spec.node_selector) +
                     ": the cluster decides it from that pool's CommProfile, " + job_pool +
                     " (kubectl get commprofile " + job_pool + " -o yaml > " + job_pool + ".yaml)");
  }
}

// The policies and namespaces of --policy-dir, as the cluster's snapshot would hold them
// (a `kubectl get -o yaml` List is read item by item). A policy that does not parse is an
// error here: the cluster would leave it out (or keep its last valid version), and a
// decision without it would not be the cluster's.
Snapshot read_policy_dir(const std::string& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec))
    throw UsageError("--policy-dir " + dir + ": not a directory");
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string ext = entry.path().extension().string();
    if (entry.is_regular_file(ec) && (ext == ".yaml" || ext == ".yml" || ext == ".json"))
      files.push_back(entry.path().string());
  }
  if (ec) throw UsageError("--policy-dir " + dir + ": " + ec.message());
  std::sort(files.begin(), files.end());
  Snapshot snapshot;
  std::map<std::string, std::string> seen;  // "CommPolicy x" -> the file it came from
  std::vector<std::string> problems;        // every one, each naming its file and object
  for (const std::string& file : files) {
    std::vector<nlohmann::json> docs;
    for (auto& doc : read_manifests(file)) {
      if (kind_of(doc).ends_with("List") && doc.contains("items") && doc["items"].is_array()) {
        for (auto& item : doc["items"]) docs.push_back(std::move(item));
      } else {
        docs.push_back(std::move(doc));
      }
    }
    for (const auto& doc : docs) {
      const std::string kind = kind_of(doc);
      if (kind != "CommPolicy" && kind != "Namespace") continue;  // not policy input
      const auto meta = doc.find("metadata");
      const std::string name = meta != doc.end() && meta->is_object() && meta->contains("name") &&
                                       (*meta)["name"].is_string()
                                   ? (*meta)["name"].get<std::string>()
                                   : "";
      if (name.empty()) {
        problems.push_back(file + ": a " + kind + " without metadata.name");
        continue;
      }
      // A cluster holds one object of a name: two here (a stale export beside a new one)
      // would be decided from whichever came last.
      const std::string id = kind + " " + name;
      if (auto [it, fresh] = seen.emplace(id, file); !fresh) {
        problems.push_back(file + ": " + id + " is also in " + it->second +
                           " (a cluster holds one; remove the stale copy)");
        continue;
      }
      if (kind == "CommPolicy") {
        try {
          snapshot.policies.push_back(parse_comm_policy(doc));
        } catch (const ValidationError& e) {
          std::string why;
          for (const auto& fe : e.errors().all()) why += "\n    " + fe.to_string();
          problems.push_back(file + ": CommPolicy " + name + " is invalid:" + why);
        }
        continue;
      }
      auto& labels = snapshot.namespace_labels[name];
      if (auto l = meta->find("labels"); l != meta->end() && !l->is_null()) {
        if (!l->is_object()) {
          problems.push_back(file + ": Namespace " + name + ": metadata.labels: must be a map");
          continue;
        }
        for (const auto& [k, v] : l->items())
          if (v.is_string()) labels[k] = v.get<std::string>();
      }
    }
  }
  if (!problems.empty()) {
    std::string message = "--policy-dir " + dir + ":";
    for (const auto& p : problems) message += "\n  " + p;
    throw UsageError(message);
  }
  return snapshot;
}

// "chosen as the cluster would: governs namespace nlp-a (3 CommPolicies in policies/)",
// or why the job's policyRef named another.
std::string policy_chosen_text(const TrainingJob& job, const CommPolicy& chosen,
                               const Snapshot& snapshot, const std::string& dir) {
  const std::string& ns = job.metadata.namespace_;
  const size_t n = snapshot.policies.size();
  const std::string in =
      " (" + std::to_string(n) + (n == 1 ? " CommPolicy" : " CommPolicies") + " in " + dir +
      (snapshot.namespace_labels.count(ns) ? "" : "; no Namespace " + ns + " there: no labels") +
      ")";
  const std::string governing =
      governing_policy(snapshot.labels_of(ns), snapshot.policies).metadata.name;
  if (chosen.metadata.name == governing) {
    std::string text = "chosen as the cluster would: governs namespace " + ns + in;
    if (!job.spec.policy_ref.empty() && !policy_ref_names(job.spec.policy_ref, chosen))
      text += "; spec.policyRef names CommPolicy " + job.spec.policy_ref +
              ", which is not at least as strict in every field that decides, so this one " +
              "decides (the webhook warns the same)";
    return text;
  }
  return "chosen as the cluster would: spec.policyRef names it, and it is at least as strict as " +
         policy_label(governing) + ", which governs namespace " + ns + in;
}

}  // namespace

int run_evaluate(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  Options opts;
  std::vector<TrainingJob> jobs;
  std::optional<CommPolicy> policy;
  std::optional<ProbeResult> probe_result;
  std::optional<CommProfile> profile;
  std::optional<TimePoint> now;
  std::optional<Snapshot> policy_snapshot;  // --policy-dir
  std::vector<CommPolicy> chosen;           // --policy-dir: each job's, in the order of jobs
  try {
    opts = parse_args(args);
    if (opts.help) {
      out << kUsage;
      return kExitAdmitted;
    }
    std::string policy_in;  // the -f file a CommPolicy came from, for the message below
    for (const auto& file : opts.job_files) {
      for (const auto& doc : read_manifests(file)) {
        const std::string kind = kind_of(doc);
        if (kind == "CommProfile" || kind == kProbeResultKind)
          throw UsageError(file + " holds a " + kind + ": use --measurement " + file +
                           " (and -f for the TrainingJob)");
        try {
          if (kind == "CommPolicy") {
            if (opts.policy_file.empty()) policy = parse_comm_policy(doc);
            policy_in = file;
          } else {
            jobs.push_back(parse_training_job(doc));
          }
        } catch (const ValidationError& e) {
          rethrow_with_file(file, kind.empty() ? "TrainingJob" : kind, e);
        }
      }
    }
    if (jobs.empty() && !policy_in.empty())
      throw UsageError("no TrainingJob in " + policy_in +
                       ": that file holds a CommPolicy: use --policy " + policy_in +
                       " (and -f for the TrainingJob)");
    if (jobs.empty())
      throw UsageError("no TrainingJob found in " + opts.job_files.front() +
                       " (it holds no manifest)");
    if (!opts.plot.empty() && jobs.size() > 1)
      throw UsageError("--plot draws one TrainingJob's chart, and -f gave " +
                       std::to_string(jobs.size()) + ": evaluate one job with --plot");
    if (!opts.policy_file.empty()) {
      auto docs = read_manifests(opts.policy_file);
      if (docs.size() != 1)
        throw UsageError(opts.policy_file + ": expected exactly one CommPolicy document");
      try {
        policy = parse_comm_policy(docs[0]);
      } catch (const ValidationError& e) {
        rethrow_with_file(opts.policy_file, "CommPolicy", e);
      }
    }
    if (!opts.policy_dir.empty()) {
      if (!policy_in.empty())
        throw UsageError(policy_in +
                         " holds a CommPolicy, and --policy-dir chooses the policy: " + "give one");
      policy_snapshot = read_policy_dir(opts.policy_dir);
      if (policy_snapshot->policies.empty())
        err << "commgate evaluate: warning: no CommPolicy in " << opts.policy_dir
            << ": the built-in default governs every namespace\n";
      for (auto& job : jobs) {
        // kubectl puts a job without a namespace in its context's, usually `default`.
        if (job.metadata.namespace_.empty()) job.metadata.namespace_ = "default";
        std::string error;
        auto selected = select_policy(job, *policy_snapshot, &error);
        if (!selected) throw UsageError(job_name(job) + ": " + error);
        chosen.push_back(std::move(*selected));
      }
    }
    if (!policy) policy = default_comm_policy();
    if (!opts.now.empty()) {
      now = parse_rfc3339(opts.now);
      if (!now)
        throw UsageError("--now must be an RFC 3339 time such as 2026-11-30T17:30:00Z, got \"" +
                         opts.now + "\"");
    }
    if (!opts.measurement_file.empty()) {
      auto docs = read_manifests(opts.measurement_file);
      if (docs.size() != 1)
        throw UsageError(opts.measurement_file + ": expected one probe result or CommProfile");
      const std::string kind = kind_of(docs[0]);
      if (kind != "CommProfile" && kind != kProbeResultKind) {
        throw UsageError(
            opts.measurement_file +
            (kind.empty() ? std::string(" has no kind") : " holds a " + printable(kind)) +
            ": --measurement takes a commgate-probe result (kind ProbeResult) or a CommProfile" +
            (kind == "TrainingJob"  ? "; a TrainingJob goes with -f"
             : kind == "CommPolicy" ? "; a CommPolicy goes with --policy"
                                    : ""));
      }
      try {
        if (kind == "CommProfile")
          profile = parse_comm_profile(docs[0], now.value_or(Clock::now()));
        else
          probe_result = parse_probe_result(docs[0]);
      } catch (const ValidationError& e) {
        rethrow_with_file(opts.measurement_file, kind == "CommProfile" ? kind : "probe result", e);
      }
      if (profile) require_same_pool(*profile, opts.measurement_file, jobs);
    }
  } catch (const UsageError& e) {
    err << "commgate evaluate: " << e.what() << "\n";
    if (std::string(e.what()).find("required") != std::string::npos && opts.job_files.empty()) {
      err << "Run 'commgate evaluate --help' for usage.\n";
    }
    return kExitBadInput;
  }

  int exit_code = kExitAdmitted;
  nlohmann::json items = nlohmann::json::array();
  std::ostringstream tables;
  std::optional<ScalingChart> chart;  // --plot: the one job's
  std::string no_chart_why;           // its decision's message, when it has no predictions
  for (size_t j = 0; j < jobs.size(); ++j) {
    const TrainingJob& job = jobs[j];
    std::optional<Measurement> measurement;
    std::string note;
    if (probe_result) {
      measurement = measurement_from_probe(*probe_result, job.spec.model,
                                           "probe result " + opts.measurement_file);
    } else if (profile) {
      measurement = measurement_from_profile(*profile, job.spec.model);
    } else if (job.spec.num_nodes > 1) {
      try {
        // In both output forms (stderr keeps JSON clean): a decision from this machine's
        // loopback says nothing about a cluster's network, and nothing else would say so.
        err << "commgate evaluate: warning: no --measurement: running commgate-probe with "
            << opts.probe.ranks
            << " local ranks, which measures this machine's loopback, not your cluster's "
               "network; for a decision about your nodes, probe them and pass --measurement "
               "PROBE.json\n";
        ProbeResult live = run_local_probe(job.spec.model, opts.probe);
        measurement = measurement_from_probe(
            live, job.spec.model,
            "live local probe (" + std::to_string(opts.probe.ranks) + " ranks on this machine)");
        note = "a local probe measures this machine's loopback, not your cluster's network";
      } catch (const std::exception& e) {
        err << "commgate evaluate: " << e.what() << "\n";
        return kExitNoMeasurement;
      }
    }
    if (measurement) explain_poor_fit(*measurement);  // no "Caution: ." in the message
    TimePoint judged_at = Clock::now();
    if (now) {
      judged_at = *now;
    } else if (measurement && !opts.measurement_file.empty()) {
      // A file the user chose is evaluated as of its own time: it is the user's word
      // that it applies. --now checks it against the policy's TTL.
      judged_at = measurement->oldest_measured_at();  // the link's or the compute's
      note = "measurementTTL not applied to a measurement file (use --now to apply it)";
    }
    const CommPolicy& job_policy = chosen.empty() ? *policy : chosen[j];
    DecisionInput in;
    in.job = &job;
    in.policy = &job_policy;
    in.measurement = measurement ? &*measurement : nullptr;
    in.requester = opts.requester;
    in.now = judged_at;
    Evaluation e;
    e.job = &job;
    e.policy = &job_policy;
    if (!chosen.empty())
      e.policy_chosen = policy_chosen_text(job, chosen[j], *policy_snapshot, opts.policy_dir);
    e.measurement = in.measurement;
    e.decision = decide(in);
    e.note = note;
    if (!opts.plot.empty()) {
      chart = scaling_chart_of(e);
      no_chart_why = e.decision.message;
    }
    if (e.decision.action == Action::kDeny) exit_code = kExitDenied;
    if (e.decision.action == Action::kGate && exit_code == kExitAdmitted) exit_code = kExitGated;
    if (opts.output != "table") {
      items.push_back(evaluation_to_json(e));
    } else {
      if (tables.tellp() > 0) tables << "\n" << std::string(100, '-') << "\n\n";
      print_evaluation_table(e, tables);
    }
  }
  // The chart before stdout: a file that cannot be written is bad input (exit 2), and
  // stdout stays empty then. No prediction (no measurement decides the job): no file.
  if (chart && chart->points.empty()) {
    err << "commgate evaluate: --plot: no chart written to " << opts.plot << ": " << chart->job
        << " has no predictions to draw (" << chart->action << ", " << chart->reason
        << "): " << no_chart_why << "\n";
  } else if (chart) {
    try {
      write_text_file(opts.plot, scaling_chart_svg(*chart));
    } catch (const UsageError& e) {
      err << "commgate evaluate: --plot: " << e.what() << "\n";
      return kExitBadInput;
    }
    err << "commgate evaluate: wrote the scaling chart of " << chart->job << " (nodes "
        << chart->points.front().nodes << "-" << chart->points.back().nodes << ") to " << opts.plot
        << "\n";
  }
  // Nothing reaches stdout until every job is evaluated: a failure leaves it empty.
  if (opts.output != "table") {
    const nlohmann::json doc =
        items.size() == 1 ? items[0] : nlohmann::json{{"kind", "List"}, {"items", items}};
    out << (opts.output == "json" ? doc.dump(2) + "\n" : to_yaml(doc));
  } else {
    out << tables.str();
  }
  return exit_code;
}

}  // namespace commgate
