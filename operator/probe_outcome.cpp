#include "operator/probe_outcome.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <string>

#include "core/field_errors.h"
#include "core/quantity.h"
#include "core/text_cut.h"
#include "operator/object_fields.h"
#include "operator/pod_scheduling.h"
#include "operator/probe_job.h"

namespace commgate::op {
namespace {

using nlohmann::json;

// How much of a failed pod's termination message goes into the outcome's message.
constexpr size_t kQuotedMessageBytes = 300;
// Failed pods named in a failure message; the rest are counted.
constexpr size_t kFailedPodsNamed = 3;

// Total accessors: any JSON, of any shape, reads as null/"" rather than throwing.
const json& field(const json& j, const char* key) {
  static const json kNull;
  if (!j.is_object()) return kNull;
  auto it = j.find(key);
  return it == j.end() ? kNull : *it;
}

std::string str(const json& j) {
  return j.is_string() ? j.get<std::string>() : std::string();
}

// The Job's terminal condition (Complete or Failed with status True); null when running.
const json* terminal_condition(const json& job) {
  const json& conditions = field(field(job, "status"), "conditions");
  if (!conditions.is_array()) return nullptr;
  for (const auto& c : conditions) {
    const std::string type = str(field(c, "type"));
    if ((type == "Complete" || type == "Failed") && str(field(c, "status")) == "True") return &c;
  }
  return nullptr;
}

std::string pod_name(const json& pod) {
  return str(field(field(pod, "metadata"), "name"));
}

// The pods by completion index, then name: messages do not depend on the list's order.
std::vector<const json*> ordered(const std::vector<json>& pods) {
  std::vector<const json*> out;
  for (const auto& p : pods) out.push_back(&p);
  std::stable_sort(out.begin(), out.end(), [](const json* a, const json* b) {
    const int ia = detail::completion_index(*a), ib = detail::completion_index(*b);
    return ia != ib ? ia < ib : pod_name(*a) < pod_name(*b);
  });
  return out;
}

// The probe container's status (named "probe", else the first).
const json& container_status(const json& pod) {
  const json& statuses = field(field(pod, "status"), "containerStatuses");
  static const json kNull;
  if (!statuses.is_array() || statuses.empty()) return kNull;
  for (const auto& s : statuses)
    if (str(field(s, "name")) == "probe") return s;
  return statuses[0];
}

const json& terminated_state(const json& pod) {
  return field(field(container_status(pod), "state"), "terminated");
}

// What commgate-probe's exit codes mean (docs/probe.md), and the signals' usual codes.
std::string exit_meaning(int64_t code) {
  switch (code) {
    case 1:
      return "a stage failed";
    case 2:
      return "bad flags or environment";
    case 3:
      return "rendezvous failed";
    case 4:
      return "timed out";
    case 5:
      return "all-reduce data check failed";
    case 137:
      return "killed";
    case 143:
      return "terminated";
    default:
      return "";
  }
}

// What a failed pod's termination message says: the probe's error (stage and message) when
// it is a report, else its first bytes as written.
std::string quoted_termination_message(const std::string& message) {
  const json doc = json::parse(message, nullptr, false);
  const json& error = field(doc, "error");
  if (error.is_object()) {
    return utf8_prefix("stage " + str(field(error, "stage")) + ": " + str(field(error, "message")),
                       kQuotedMessageBytes);
  }
  return utf8_prefix(message, kQuotedMessageBytes);
}

// "rank 1 (pod p-1-x): exit code 3 (rendezvous failed), reason Error: stage rendezvous: ..."
std::string describe_failed_pod(const json& pod) {
  const int index = detail::completion_index(pod);
  std::string out =
      (index == INT_MAX ? std::string("pod ") : "rank " + std::to_string(index) + " (pod ") +
      pod_name(pod) + (index == INT_MAX ? "" : ")");
  const json& term = terminated_state(pod);
  if (term.is_object()) {
    const json& code = field(term, "exitCode");
    if (code.is_number_integer()) {
      const int64_t c = code.get<int64_t>();
      out += ": exit code " + std::to_string(c);
      if (const std::string meaning = exit_meaning(c); !meaning.empty())
        out += " (" + meaning + ")";
    }
    if (const std::string reason = str(field(term, "reason")); !reason.empty())
      out += ", reason " + reason;
    if (const std::string message = str(field(term, "message")); !message.empty())
      out += ": " + quoted_termination_message(message);
  } else {
    const std::string reason = str(field(field(pod, "status"), "reason"));
    out += ": " + (reason.empty() ? std::string("no container terminated") : "reason " + reason);
  }
  return out;
}

bool pod_failed(const json& pod) {
  if (str(field(field(pod, "status"), "phase")) == "Failed") return true;
  const json& code = field(terminated_state(pod), "exitCode");
  return code.is_number_integer() && code.get<int64_t>() != 0;
}

ProbeOutcome outcome(ProbeState state, const char* reason, std::string message) {
  ProbeOutcome o;
  o.state = state;
  o.reason = reason;
  o.message = std::move(message);
  return o;
}

// A pod not on a node yet: Pending (or without a status) and not PodScheduled. The
// scheduler marks such pods Unschedulable one at a time, so counting only the marked ones
// read "1 of 2" and "2 of 2" by turns while no node matched (user trial, #9).
bool not_scheduled(const json& pod) {
  const std::string phase = str(field(field(pod, "status"), "phase"));
  if (!phase.empty() && phase != "Pending") return false;
  if (!str(field(field(pod, "spec"), "nodeName")).empty()) return false;
  const json& conditions = field(field(pod, "status"), "conditions");
  if (conditions.is_array()) {
    for (const auto& c : conditions) {
      if (str(field(c, "type")) == "PodScheduled" && str(field(c, "status")) == "True")
        return false;
    }
  }
  return true;
}

// How many pods the probe Job runs: its completions (one per node), or the pods seen when
// there are more (a replaced pod beside its successor).
int64_t probe_pod_total(const json& job, const std::vector<const json*>& pods) {
  const json& completions = field(field(job, "spec"), "completions");
  const int64_t want = completions.is_number_integer() ? completions.get<int64_t>() : 0;
  return std::max<int64_t>(want, static_cast<int64_t>(pods.size()));
}

// "2 of 2 probe pods are not scheduled": of the pods the probe Job runs (pods it has not
// created yet are not scheduled either).
std::string not_scheduled_count(const json& job, const std::vector<const json*>& pods) {
  const int64_t total = probe_pod_total(job, pods);
  int64_t waiting = total - static_cast<int64_t>(pods.size());
  for (const json* p : pods) waiting += not_scheduled(*p) ? 1 : 0;
  return std::to_string(waiting) + " of " + std::to_string(total) +
         (total == 1 ? " probe pod is" : " probe pods are") + " not scheduled";
}

// What one probe pod asks the scheduler for ("memory 8Gi, nvidia.com/gpu 4"), from the
// Job's pod template; "" when it asks for nothing. An unschedulable probe's message names
// it: the scheduler's "Insufficient nvidia.com/gpu" does not say that the probe asked for
// the job's numProcPerNode GPUs, nor how much memory its model needs (a trial's job of
// 1024 processes per node and 1e15 parameters read as a riddle).
std::string pod_requests(const json& job) {
  const json& containers =
      field(field(field(field(job, "spec"), "template"), "spec"), "containers");
  if (!containers.is_array()) return "";
  std::string out;
  for (const auto& c : containers) {
    const json& requests = field(field(c, "resources"), "requests");
    if (!requests.is_object()) continue;
    for (const auto& [resource, amount] : requests.items()) {
      if (!amount.is_string()) continue;
      out += (out.empty() ? "" : ", ") + resource + " " + amount.get<std::string>();
    }
  }
  return out;
}

// Why a scheduled pod has not started: its first container's waiting reason, with the
// kubelet's message for the reasons that need one to act on ("ImagePullBackOff: Back-off
// pulling image ..."); "" when no container says.
std::string waiting_reason(const json& pod) {
  const json& statuses = field(field(pod, "status"), "containerStatuses");
  if (!statuses.is_array()) return "";
  for (const auto& s : statuses) {
    const json& waiting = field(field(s, "state"), "waiting");
    const std::string reason = str(field(waiting, "reason"));
    if (reason.empty()) continue;
    const std::string message = str(field(waiting, "message"));
    if (message.empty() || reason == "ContainerCreating" || reason == "PodInitializing")
      return reason;
    return reason + ": " + utf8_prefix(message, kQuotedMessageBytes);
  }
  return "";
}

// Where each of a running probe's pods is (#20: a probe `Probing` for ten minutes said
// nothing of whether it measured or waited for an image): "2 probe pods: 1 measuring,
// 1 starting (ImagePullBackOff: Back-off pulling image ...)"; pods the Job has not created
// yet count as not created.
std::string pod_stages(const json& job, const std::vector<const json*>& pods) {
  int measuring = 0, starting = 0, finished = 0, failed_pods = 0, unscheduled = 0;
  std::string why_starting;
  for (const json* p : pods) {
    const std::string phase = str(field(field(*p, "status"), "phase"));
    if (phase == "Succeeded") {
      ++finished;
    } else if (phase == "Failed") {
      ++failed_pods;
    } else if (phase == "Running") {
      ++measuring;
    } else if (not_scheduled(*p)) {
      ++unscheduled;
    } else {
      ++starting;
      if (why_starting.empty()) why_starting = waiting_reason(*p);
    }
  }
  const int64_t total = probe_pod_total(job, pods);
  const int64_t not_created = total - static_cast<int64_t>(pods.size());
  std::string out;
  auto add = [&](int64_t n, const std::string& what) {
    if (n > 0) out += (out.empty() ? "" : ", ") + std::to_string(n) + " " + what;
  };
  add(measuring, "measuring");
  add(starting, "starting" + (why_starting.empty() ? "" : " (" + why_starting + ")"));
  add(unscheduled, "not scheduled yet");
  add(not_created, "not created yet");
  add(finished, "finished");
  add(failed_pods, "failed");
  if (out.empty()) out = "none created yet";
  return std::to_string(total) + (total == 1 ? " probe pod: " : " probe pods: ") + out;
}

ProbeOutcome running(const json& job, const std::vector<json>& pods) {
  const auto all = ordered(pods);
  std::optional<std::string> first;
  for (const json* p : all) {
    if (auto m = unschedulable_message(*p)) {
      first = *m;
      break;
    }
  }
  if (first) {
    std::string message = not_scheduled_count(job, all);
    // Short of a resource: say how much of it each probe pod asked for.
    if (const std::string asked = pod_requests(job);
        !asked.empty() && first->find("Insufficient") != std::string::npos)
      message += " (each requests " + asked + ")";
    message += ": " + *first;
    return outcome(ProbeState::kUnschedulable, kReasonProbeUnschedulable, message);
  }
  return outcome(ProbeState::kRunning, kReasonProbeRunning, pod_stages(job, all));
}

ProbeOutcome failed(const json& job, const json& condition, const std::vector<json>& pods) {
  const bool deadline = str(field(condition, "reason")) == "DeadlineExceeded";
  std::string message = str(field(condition, "message"));
  if (message.empty()) message = "the probe Job failed";
  const json& limit = field(field(job, "spec"), "activeDeadlineSeconds");
  if (deadline && limit.is_number_integer()) {
    // The Job controller deletes the pods still running, so this may be all there is to say.
    message += " (activeDeadlineSeconds " + std::to_string(limit.get<int64_t>()) +
               ": the policy's probe timeout plus " + std::to_string(kProbeStartupMarginSeconds) +
               " s for scheduling and start-up)";
  }
  std::vector<std::string> described;
  size_t failed_pods = 0;
  // The probe's own --timeout (the policy's probe.timeoutSeconds) expired: exit code 4,
  // a deadline as much as the Job's (docs/troubleshooting.md ProbeDeadlineExceeded).
  bool timed_out = deadline;
  for (const json* p : ordered(pods)) {
    if (!pod_failed(*p)) continue;
    const json& code = field(terminated_state(*p), "exitCode");
    timed_out = timed_out || (code.is_number_integer() && code.get<int64_t>() == 4);
    if (++failed_pods <= kFailedPodsNamed) described.push_back(describe_failed_pod(*p));
  }
  for (const auto& d : described) message += "; " + d;
  if (failed_pods > described.size())
    message += "; and " + std::to_string(failed_pods - described.size()) + " more failed pod(s)";
  return outcome(ProbeState::kFailed, timed_out ? kReasonProbeDeadlineExceeded : kReasonProbeFailed,
                 message);
}

ProbeOutcome invalid(const std::string& message) {
  return outcome(ProbeState::kInvalidResult, kReasonProbeResultInvalid, message);
}

// Rank 0's pod: the one with completion index 0 whose container exited 0, else any with
// index 0.
const json* rank0_pod(const std::vector<json>& pods) {
  const json* any = nullptr;
  for (const json* p : ordered(pods)) {
    if (detail::completion_index(*p) != 0) continue;
    const json& code = field(terminated_state(*p), "exitCode");
    if (code.is_number_integer() && code.get<int64_t>() == 0) return p;
    if (!any) any = p;
  }
  return any;
}

std::string field_errors_text(const ValidationError& e) {
  std::string out;
  for (const auto& err : e.errors().all()) out += (out.empty() ? "" : "; ") + err.to_string();
  return out.empty() ? std::string(e.what()) : out;
}

ProbeOutcome succeeded(const json& job, const std::vector<json>& pods) {
  const json* pod = rank0_pod(pods);
  if (pod == nullptr) {
    ProbeOutcome gone =
        invalid("the probe Job completed but rank 0's pod is gone: no result to read");
    gone.rank0_pod_missing = true;
    return gone;
  }
  const std::string pod_phase = str(field(field(*pod, "status"), "phase"));
  if (!terminated_state(*pod).is_object() && (pod_phase == "Running" || pod_phase == "Pending")) {
    // The Job's Complete came through its watch before the pod's end through the pods':
    // the result is not readable yet, not invalid.
    return outcome(
        ProbeState::kRunning, kReasonProbeRunning,
        "the probe Job completed; waiting to see rank 0's pod (" + pod_name(*pod) + ") terminated");
  }
  const std::string where = "rank 0's termination message (pod " + pod_name(*pod) + ")";
  const std::string message = str(field(terminated_state(*pod), "message"));
  if (message.empty())
    return invalid(where + " is empty: the probe wrote no result to /dev/termination-log");

  const json doc = json::parse(message, nullptr, false);
  if (doc.is_discarded()) {
    const bool cut = message.size() >= kTerminationMessageLimit;
    return invalid(where + " is not JSON" +
                   (cut ? " (cut at the " + std::to_string(kTerminationMessageLimit) +
                              "-byte termination message limit)"
                        : "") +
                   ": " + utf8_prefix(message, 80));
  }
  ProbeResult result;
  try {
    result = parse_probe_result(doc);
  } catch (const ValidationError& e) {
    return invalid(where + " is not a valid ProbeResult: " + field_errors_text(e));
  } catch (const std::exception& e) {
    return invalid(where + " is not a valid ProbeResult: " + e.what());
  }
  if (result.error) {
    return invalid(where + " reports an error although the probe exited 0: error: stage " +
                   result.error->stage + ": " +
                   utf8_prefix(result.error->message, kQuotedMessageBytes));
  }
  const json& completions = field(field(job, "spec"), "completions");
  if (completions.is_number_integer() && completions.get<int64_t>() != result.nodes) {
    return invalid(where + " is not this probe's: world.nodes: " + std::to_string(result.nodes) +
                   ", but the probe Job ran " + format_nodes(completions.get<int64_t>()));
  }
  ProbeOutcome o =
      outcome(ProbeState::kSucceeded, kReasonProbeSucceeded,
              "measured " + format_gbps(result.fit.busbw_bytes_per_s) + " bus bandwidth over " +
                  format_nodes(result.nodes) + " (" + result.backend +
                  (result.transport.empty() ? "" : ", " + result.transport) + ")");
  o.result = std::move(result);
  return o;
}

}  // namespace

bool probe_finished(const json& job) {
  return terminal_condition(job) != nullptr;
}

const char* to_string(ProbeState state) {
  switch (state) {
    case ProbeState::kRunning:
      return "Running";
    case ProbeState::kSucceeded:
      return "Succeeded";
    case ProbeState::kFailed:
      return "Failed";
    case ProbeState::kUnschedulable:
      return "Unschedulable";
    case ProbeState::kInvalidResult:
      return "InvalidResult";
  }
  return "Unknown";
}

ProbeOutcome read_probe_outcome(const json& job, const std::vector<json>& pods) {
  const json* condition = terminal_condition(job);
  if (condition == nullptr) return running(job, pods);
  if (str(field(*condition, "type")) == "Failed") return failed(job, *condition, pods);
  return succeeded(job, pods);
}

std::string pool_measured(const std::string& pool, int nodes, double busbw_bytes_per_s,
                          const std::string& backend, const std::string& transport) {
  return "pool " + pool + " measured on " + format_nodes(nodes) + ": all-reduce busbw " +
         format_gbps(busbw_bytes_per_s) + " (" + backend +
         (transport.empty() ? "" : ", " + transport) + ")";
}

std::string without_final_stop(const std::string& text) {
  return text.ends_with('.') ? text.substr(0, text.size() - 1) : text;
}

}  // namespace commgate::op
