#include "cli/profile_command.h"

#include <array>
#include <ostream>
#include <regex>
#include <utility>

#include "cli/command_input.h"
#include "cli/manifest_yaml.h"
#include "core/field_errors.h"
#include "core/profile_recording.h"

namespace commgate {
namespace {

constexpr const char* kProfileUsage =
    R"(Usage: commgate profile --from-probe PROBE.json [--node-selector k=v,...] [-o yaml|json]

Prints the CommProfile manifest commgate's operator would write for a node pool after a
probe: named after the pool (the name the webhook looks up for a TrainingJob with that
spec.nodeSelector), its status the probe's measurement. A decision from the profile is
the decision `commgate evaluate --measurement PROBE.json` prints.

Options:
      --from-probe FILE      a commgate-probe result (JSON, as the probe prints it)
      --node-selector SEL    the pool: the jobs' spec.nodeSelector as key=value pairs,
                             comma-separated, in any order (default: none, the pool of
                             jobs without a nodeSelector, "pool-all"); repeatable
  -o, --output FORMAT        yaml (default) or json
  -h, --help                 this help

`kubectl apply -f` stores no status (CommProfile status is a subresource): apply the
profile, then its status:
  commgate profile --from-probe probe.json --node-selector k=v > profile.yaml
  kubectl apply -f profile.yaml
  kubectl apply --server-side --subresource=status -f profile.yaml

Exit codes: 0 printed, 2 bad input (the message names the file and the field).
)";

struct ProfileOptions {
  std::string probe_file;
  std::map<std::string, std::string> node_selector;
  std::string output = "yaml";
  bool help = false;
};

ProfileOptions parse_profile_args(const std::vector<std::string>& args) {
  ProfileOptions o;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    const size_t eq =
        arg.rfind("--", 0) == 0 || arg.rfind("-o=", 0) == 0 ? arg.find('=') : std::string::npos;
    const std::string flag = arg.substr(0, eq);
    auto value = [&]() -> std::string {
      if (eq != std::string::npos) return arg.substr(eq + 1);
      if (i + 1 >= args.size()) throw UsageError(flag + " needs a value");
      return args[++i];
    };
    if (flag == "-h" || flag == "--help") {
      o.help = true;
    } else if (flag == "--from-probe") {
      o.probe_file = value();
    } else if (flag == "--node-selector") {
      for (auto& [k, v] : parse_node_selector(value())) {
        if (!o.node_selector.emplace(k, v).second)
          throw UsageError("--node-selector: key \"" + k + "\" given twice");
      }
    } else if (flag == "-o" || flag == "--output") {
      o.output = value();
      if (o.output != "yaml" && o.output != "json")
        throw UsageError("--output must be yaml or json, got \"" + printable(o.output) + "\"");
    } else {
      throw UsageError("unknown argument \"" + printable(arg) + "\"");
    }
  }
  if (!o.help && o.probe_file.empty()) throw UsageError("--from-probe PROBE.json is required");
  return o;
}

// Where a field of the profile comes from in the probe result, so an error names the
// field the user can look at in the file they gave.
std::string probe_path_of(const std::string& profile_path) {
  static const std::array<std::pair<const char*, const char*>, 11> kSources = {{
      {"status.link.measuredAt", "startTime"},
      {"status.link.nodesProbed", "world.nodes"},
      {"status.link.procsPerNode", "world.procsPerNode"},
      {"status.link.algbwGBps", "allReduce.results[-1].algbwGBps"},
      {"status.link.", "allReduce.fit."},
      {"status.computeSteps[0].measuredAt", "startTime"},
      {"status.computeSteps[0].ddpStep.nodes", "world.nodes"},
      {"status.computeSteps[0].ddpStep.procsPerNode", "world.procsPerNode"},
      {"status.computeSteps[0].ddpStep.", "ddpStep."},
      {"status.computeSteps[0].", "compute."},
      {"status.", ""},
  }};
  for (const auto& [from, to] : kSources) {
    const std::string prefix = from;
    const bool whole = prefix.back() != '.';
    if (whole ? profile_path == prefix : profile_path.rfind(prefix, 0) == 0)
      return whole ? to : to + profile_path.substr(prefix.size());
  }
  return "";
}

ProbeResult read_probe_result(const std::string& path) {
  const auto docs = read_manifests(path);
  if (docs.size() != 1)
    throw UsageError(path + ": expected one commgate-probe result, found " +
                     std::to_string(docs.size()) + " documents");
  const std::string kind = kind_of(docs[0]);
  if (kind == "CommProfile")
    throw UsageError(path + " is already a CommProfile: apply it as it is (docs/webhook.md)");
  if (!kind.empty() && kind != kProbeResultKind)
    throw UsageError(path + " holds a " + printable(kind) +
                     "; --from-probe takes a commgate-probe result (kind ProbeResult)");
  ProbeResult result;
  try {
    result = parse_probe_result(docs[0]);
  } catch (const ValidationError& e) {
    std::string msg = path + ": invalid probe result:";
    for (const auto& fe : e.errors().all()) msg += "\n  " + printable(fe.to_string());
    throw UsageError(msg);
  }
  if (result.error) {
    throw UsageError(path + ": error: the probe failed (stage " + printable(result.error->stage) +
                     ": " + printable(result.error->message) +
                     "); a failed probe is no measurement: fix it and probe again");
  }
  return result;
}

// The profile as the webhook will read it: anything it would refuse is refused here,
// named by the probe result's field it came from.
void check_profile(const std::string& path, const CommProfile& profile) {
  try {
    parse_comm_profile(to_json(profile), Clock::now());
  } catch (const ValidationError& e) {
    std::string msg = path + ": this probe result makes a CommProfile the webhook would refuse:";
    for (const auto& fe : e.errors().all()) {
      const std::string source = probe_path_of(fe.path);
      msg += "\n  " + printable(source.empty() ? fe.to_string()
                                               : source + ": " + fe.message + " (the profile's " +
                                                     fe.path + ")");
    }
    throw UsageError(msg);
  }
}

std::string selector_text(const std::map<std::string, std::string>& selector) {
  std::string text;
  for (const auto& [k, v] : selector) text += (text.empty() ? "" : ",") + k + "=" + v;
  return text;
}

}  // namespace

std::map<std::string, std::string> parse_node_selector(const std::string& text) {
  static const std::regex kName(R"([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)");
  static const std::regex kPrefix(
      R"([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)");
  std::map<std::string, std::string> out;
  size_t start = 0;
  while (start <= text.size() && !text.empty()) {
    size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    const std::string pair = text.substr(start, end - start);
    start = end + 1;
    const size_t eq = pair.find('=');
    auto bad = [&](const std::string& why) {
      return UsageError("--node-selector: \"" + printable(pair) + "\" " + why);
    };
    if (eq == std::string::npos) throw bad("is not key=value");
    const std::string key = pair.substr(0, eq), value = pair.substr(eq + 1);
    const size_t slash = key.find('/');
    const std::string prefix = slash == std::string::npos ? "" : key.substr(0, slash);
    const std::string name = slash == std::string::npos ? key : key.substr(slash + 1);
    if (slash != std::string::npos && (prefix.size() > 253 || !std::regex_match(prefix, kPrefix)))
      throw bad("has a key prefix that is not a DNS subdomain (such as commgate.io)");
    if (name.empty() || name.size() > 63 || !std::regex_match(name, kName))
      throw bad(
          "has a key that is not a label name (at most 63 characters: letters, digits, '-', "
          "'_', '.', starting and ending with a letter or digit)");
    if (value.size() > 63 || (!value.empty() && !std::regex_match(value, kName)))
      throw bad(
          "has a value that is not a label value (at most 63 characters: letters, digits, "
          "'-', '_', '.', starting and ending with a letter or digit)");
    if (!out.emplace(key, value).second) throw bad("repeats key \"" + key + "\"");
    if (end == text.size()) break;
  }
  return out;
}

CommProfile profile_from_probe(const ProbeResult& probe,
                               const std::map<std::string, std::string>& node_selector) {
  CommProfile profile;
  profile.node_selector = node_selector;
  profile.metadata.name = pool_name(node_selector);
  record_probe_result(profile, probe);
  return profile;
}

int run_profile(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  try {
    const ProfileOptions opts = parse_profile_args(args);
    if (opts.help) {
      out << kProfileUsage;
      return 0;
    }
    const CommProfile profile =
        profile_from_probe(read_probe_result(opts.probe_file), opts.node_selector);
    check_profile(opts.probe_file, profile);
    const nlohmann::json manifest = to_json(profile);
    out << (opts.output == "json" ? manifest.dump(2) + "\n" : to_yaml(manifest));
    err << "commgate profile: CommProfile " << profile.metadata.name << " for "
        << (opts.node_selector.empty() ? std::string("jobs without a spec.nodeSelector")
                                       : "spec.nodeSelector " + selector_text(opts.node_selector))
        << ". kubectl apply stores no status: apply it, then apply its status with\n"
           "  kubectl apply --server-side --subresource=status -f FILE\n";
    return 0;
  } catch (const UsageError& e) {
    err << "commgate profile: " << e.what() << "\n";
    if (std::string(e.what()).find("is required") != std::string::npos)
      err << "Run 'commgate profile --help' for usage.\n";
    return 2;
  }
}

}  // namespace commgate
