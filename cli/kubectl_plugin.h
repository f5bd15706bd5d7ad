// `kubectl commgate` (issue #24): a kubectl plugin (the executable kubectl-commgate on PATH)
// that asks the live cluster what commgate decides, with the user's own kubectl: its
// kubeconfig, context, namespace and credentials (exec plugins included), since every
// request goes through `kubectl` itself. docs/cli.md "kubectl commgate".
//
//   kubectl commgate evaluate -f job.yaml   what the admission webhook would decide now
//                                           (a server-side dry run: nothing is created)
//   kubectl commgate explain tj NAME        a TrainingJob's decision, numbers, advice,
//                                           conditions and Events (--plot FILE.svg: its
//                                           scaling chart, cli/scaling_chart.h)
//   kubectl commgate pools                  the measured pools, their link and age, and
//                                           the policies for which each is stale
//
// Renderers are pure (table-tested); run_kubectl_plugin wires them to a kubectl runner.
#pragma once

#include <functional>
#include <iosfwd>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cli/scaling_chart.h"
#include "cli/subprocess.h"
#include "core/comm_policy.h"
#include "core/time_format.h"

namespace commgate {

// Exit codes, as kubectl's (0 success, 1 error, usage errors included) with the would-be
// outcome of evaluate on top, for scripts: docs/cli.md.
inline constexpr int kPluginOk = 0;         // evaluate: it would run (admitted,
                                            // downsized, or admitted over policy)
inline constexpr int kPluginError = 1;      // kubectl failed, or an answer did not parse
inline constexpr int kPluginUsage = 1;      // bad flags or arguments (kubectl: 1 too;
                                            // 2 before the trial of 2026-12-06)
inline constexpr int kPluginWouldDeny = 3;  // evaluate: the webhook would refuse it
inline constexpr int kPluginWouldGate = 4;  // evaluate: admitted suspended, waiting to
                                            // be measured or for its pool

// Runs `kubectl <args>` (the plugin's global flags already added) and captures it.
using KubectlRunner = std::function<Captured(const std::vector<std::string>& args)>;

int run_kubectl_plugin(const std::vector<std::string>& args, const KubectlRunner& kubectl,
                       std::ostream& out, std::ostream& err, TimePoint now);

// What `evaluate` shows, as a document (its -o json): decision_document
// (cli/evaluate_report.h, the shape `commgate evaluate -o json` and `explain -o json`
// share) with dryRun, warnings and suspended. From the dry run's answer: the object the
// webhook returned (or none when refused), the refusal's message, the warnings kubectl
// printed ("Warning: " cut), and the TrainingJob read from the file (null when it came
// from stdin): a refusal returns no object, so its name and request come from there and
// from the webhook's dry-run warning. A dry run tells no predictions: decision.predictions
// is empty.
nlohmann::json evaluation_of(const nlohmann::json& returned, const std::string& refusal,
                             const std::vector<std::string>& warnings,
                             const nlohmann::json& submitted = nlohmann::json());

// The decision the webhook tells a dry run (webhook/mutate.cpp dry_run_decision_warning):
// {decision, reason, requestedNodes, admittedNodes, policy, message}; nullopt when no
// warning is that line (a webhook older than issue #24).
std::optional<nlohmann::json> dry_run_decision_of(const std::vector<std::string>& warnings);
std::string evaluation_table(const nlohmann::json& evaluation);

// `explain`: the TrainingJob as stored and its Events (an EventList; null when they
// could not be listed), as decision_document with phase, conditions, events and
// measurementAge.
// `policy`: the deciding CommPolicy's spec, when it could be read; each stored prediction
// then carries "policy": pass, over or not decided, as `commgate evaluate` judges it ("-"
// in the table without it).
nlohmann::json explanation_of(const nlohmann::json& trainingjob, const nlohmann::json& events,
                              TimePoint now,
                              const std::optional<CommPolicySpec>& policy = std::nullopt);
std::string explanation_text(const nlohmann::json& explanation);

// `explain --plot`: the scaling chart of a TrainingJob as stored, drawn from the counts its
// decision stored (status.decision.predictions: 1 to the request) and its
// status.measurement. `policy` is the deciding CommPolicy's spec (status.decision.policy),
// nullopt when it could not be read: the chart then draws no limit, and `policy_note`
// says why. No predictions (not decided from a measurement yet): no points.
ScalingChart scaling_chart_of_trainingjob(const nlohmann::json& trainingjob,
                                          const std::optional<CommPolicySpec>& policy,
                                          const std::string& policy_note);

// `pools`: CommProfiles (a List) and CommPolicies (a List; null when they could not be
// listed: the STALE FOR column then says so).
nlohmann::json pools_of(const nlohmann::json& profiles, const nlohmann::json& policies,
                        TimePoint now);
std::string pools_table(const nlohmann::json& pools);

// The "Warning: " lines of kubectl's stderr, without the prefix.
std::vector<std::string> kubectl_warnings(const std::string& stderr_text);

}  // namespace commgate
