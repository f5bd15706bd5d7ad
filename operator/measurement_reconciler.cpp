#include "operator/measurement_reconciler.h"

#include <algorithm>
#include <utility>

#include "core/field_errors.h"
#include "core/json_access.h"
#include "core/profile_recording.h"
#include "core/prometheus_text.h"
#include "core/quantity.h"
#include "core/significant_digits.h"
#include "core/text_cut.h"
#include "kube/api_error.h"
#include "kube/retry_on_conflict.h"
#include "operator/conditions.h"
#include "operator/object_fields.h"
#include "operator/object_paths.h"
#include "operator/probe_retry.h"
#include "operator/trainingjob_phases.h"

namespace commgate::op {
namespace {

// "; running 3m of its 11m deadline": how far a running probe is, so a long probe does
// not read as stuck (the trial of #20: a 350M probe took 599 s of 600, Probing the whole
// time). Whole minutes: the CommProfile's status changes once a minute, not every poll.
std::string probe_elapsed_text(const nlohmann::json& probe, TimePoint now) {
  const auto created = parse_rfc3339(detail::meta_string(probe, "creationTimestamp"));
  const nlohmann::json& deadline = json_at(probe, {"spec", "activeDeadlineSeconds"});
  if (!created || !deadline.is_number_integer()) return "";
  const auto minutes = std::chrono::duration_cast<std::chrono::minutes>(now - *created);
  const std::string elapsed =
      minutes.count() < 1 ? std::string("under 1m") : format_duration(minutes);
  return "; running " + elapsed + " of its " +
         format_duration(std::chrono::seconds(deadline.get<int64_t>())) + " deadline";
}

using kube::Action;
using kube::ApiError;
using kube::ReconcileError;
using kube::ReconcileResult;
using nlohmann::json;
using namespace detail;

// A reconcile that changed the pool's state looks again after this long (its own write
// waited for in the cache).
constexpr std::chrono::milliseconds kAgainNow{1};
// Events on this many of the jobs a probe serves, at most.
constexpr size_t kJobsTold = 8;

// "; not given to the probe, of the job's tolerations: ... (CommPolicy team's
// probe.tolerationKeys: nvidia.com/gpu)", or "".
std::string dropped_tolerations_note(const std::vector<std::string>& dropped,
                                     const CommPolicy& policy) {
  if (dropped.empty()) return "";
  std::string what, keys;
  for (const auto& d : dropped) what += (what.empty() ? "" : ", ") + d;
  for (const auto& k : policy.spec.probe.toleration_keys) keys += (keys.empty() ? "" : ", ") + k;
  return "; not given to the probe, of the job's tolerations: " + what + " (" +
         policy_label(policy.metadata.name) +
         "'s probe.tolerationKeys: " + (keys.empty() ? "none" : keys) + ")";
}

// Whether a CommProfile's status holds a measurement of any kind (a link or a compute
// step), as written, parseable or not.
bool has_measurement(const json& profile) {
  const json& status = profile.value("status", json::object());
  if (!status.is_object()) return false;
  const json& steps = status.value("computeSteps", json::array());
  return status.contains("link") || (steps.is_array() && !steps.empty());
}

std::optional<TimePoint> hostname_pool_expiry(const CommProfile& profile) {
  if (profile.hostnames.empty()) return std::nullopt;
  TimePoint newest{};
  if (profile.status.link) newest = profile.status.link->measured_at;
  for (const ComputeStepRecord& c : profile.status.compute_steps)
    newest = std::max(newest, c.measured_at);
  return newest + kHostnamePoolRetention;
}

// The consumers' keys as a user reads them: "ml/bert" (a TrainingJob) or "Workload
// ml/pytorchjob-bert-1a2b3" (not the internal "kueue-workload:" key: the trial of
// 2026-12-07).
std::string joined(const std::vector<std::string>& items) {
  std::vector<std::string> named = items;
  for (std::string& n : named)
    if (is_workload_demand(n)) n = "Workload " + workload_key_of_demand(n);
  return listed(named, kJobsTold);
}

}  // namespace

struct MeasurementReconciler::Pool {
  std::string name, path;
  TimePoint now{};
  Logger log = Logger::discard();  // the settings' logger with the pool's name
  Snapshot view;                   // the snapshot with the pool's profile as the cache has it
  std::optional<json> profile;     // the CommProfile as read (or created, or written)
  std::vector<MeasurementDemand> demands;
};

MeasurementReconciler::MeasurementReconciler(
    const kube::Reader& reader, const kube::Reader& live_reader, kube::Writer& writer,
    kube::StatusWriter& status_writer, std::function<std::shared_ptr<const Snapshot>()> snapshot,
    kube::EventRecorder& events, std::function<TimePoint()> now,
    std::function<std::vector<std::string>(const std::string&)> waiting,
    MeasurementSettings settings)
    : reader_(reader),
      live_reader_(live_reader),
      writer_(writer),
      status_writer_(status_writer),
      snapshot_(std::move(snapshot)),
      events_(events),
      now_(std::move(now)),
      waiting_(std::move(waiting)),
      settings_(std::move(settings)),
      probes_created_(
          metrics_.counter("commgate_operator_probes_created_total", "Probe Jobs created.")),
      // A histogram, so that dashboards can show quantiles across replicas and time. A
      // probe takes tens of seconds on a healthy pool; its Job's deadline is the policy's
      // timeout + 60 s.
      probe_duration_(metrics_.histogram(
          "commgate_operator_probe_duration_seconds",
          "From a probe Job's creation to its outcome recorded in the CommProfile.",
          {5, 10, 30, 60, 120, 300, 600, 1800})) {
  metrics_.add_collector([this] { return pool_gauges(); });
  // Every reason at 0 from the start, for dashboards and rate().
  for (const char* reason :
       {kReasonProbeFailed, kReasonProbeDeadlineExceeded, kReasonProbeUnschedulable,
        kReasonProbeResultInvalid, op_reason::kMeasurementInsufficient})
    probe_failures(reason);
}

Counter& MeasurementReconciler::probe_failures(const std::string& reason) {
  return metrics_.counter("commgate_operator_probe_failures_total",
                          "Probe attempts that failed, by reason.", {{"reason", reason}});
}

ReconcileResult MeasurementReconciler::reconcile(const std::string& pool) {
  auto failed = [&](const std::string& message) {
    return ReconcileError::retryable("pool " + pool + ": " + message);
  };
  try {
    const auto snapshot = snapshot_();
    if (!snapshot) return ReconcileError::retryable("no snapshot of policies and profiles yet");
    Pool p;
    p.name = pool;
    p.path = profile_path(pool);
    p.now = now_();
    p.log = settings_.log.with({{"pool", pool}});
    p.profile = get_or_null(reader_, p.path);
    // The cache has not caught up with this process's last write of the profile: what it
    // shows is the stale echo of the pool's own state (a measurement not yet there would
    // start a second probe). Its watch event is near.
    if (p.profile && own_writes_.newer_than(p.path, *p.profile).has_value())
      return Action::requeue_after(std::chrono::milliseconds(100));
    if (!p.profile) own_writes_.forget(p.path);
    p.view = *snapshot;
    p.view.profiles.erase(pool);
    if (p.profile) {
      try {
        p.view.profiles[pool] = parse_comm_profile(*p.profile, p.now);
      } catch (const ValidationError&) {
        // Unusable as it is: the jobs are decided as having no measurement, and the probe's
        // result replaces the status.
      }
    }
    for (const std::string& key : waiting_(pool)) {
      if (is_workload_demand(key)) {
        auto demand = settings_.workload_demand ? settings_.workload_demand(key, p.view, p.now)
                                                : std::nullopt;
        if (demand && demand->pool == pool) p.demands.push_back(std::move(*demand));
        continue;
      }
      const auto waiting = parse_key(key);
      if (!waiting) continue;
      const auto job = get_or_null(reader_, trainingjob_path(waiting->ns, waiting->name));
      if (!job) continue;
      auto demand = measurement_demand(*job, p.view, settings_.records.get(), p.now);
      if (demand && demand->pool == pool) p.demands.push_back(std::move(*demand));
    }

    if (auto probe =
            get_or_null(reader_, jobs_collection(settings_.probe.ns) + "/" + probe_job_name(pool)))
      return collect(p, *probe);

    if (p.demands.empty()) {
      stop_gathering(pool);
      // Nobody waits and nothing was ever measured (a nodeSelector with a typo whose job
      // was deleted): the empty CommProfile the controller made goes, rather than stay for
      // ever. So does a pool of named hosts (one Workload's topology assignment) once its
      // measurement is kHostnamePoolRetention old: each assignment makes a profile, and
      // the hosts' next job is assigned other hosts as often as not. A pool of a
      // nodeSelector with a measurement, or a profile made by someone else, stays.
      const auto parsed = p.view.profiles.find(pool);
      const std::optional<TimePoint> expires =
          parsed == p.view.profiles.end() ? std::nullopt : hostname_pool_expiry(parsed->second);
      const bool managed =
          p.profile &&
          p.profile->value(json::json_pointer("/metadata/labels/app.kubernetes.io~1managed-by"),
                           json()) == json(kManagedByValue);
      const bool measured = managed && has_measurement(*p.profile);
      if (measured && expires && p.now < *expires)
        return Action::requeue_after(
            std::chrono::duration_cast<kube::Clock::duration>(*expires - p.now));
      if (managed && (!measured || expires)) {
        kube::DeleteOptions options;
        options.precondition_uid = meta_string(*p.profile, "uid");
        bool deleted = true;
        try {
          remove_if_present(writer_, p.path, options);
        } catch (const ApiError& e) {
          // Another object of that name now (409): kept. Not allowed (403: RBAC without
          // delete): kept, and said; the failures below restart all the same.
          if (!e.conflict() && e.code() != 403) throw;
          deleted = false;
          if (e.code() == 403) p.log.warning(std::string("cannot delete CommProfile: ") + e.what());
        }
        if (deleted) {
          own_writes_.forget(p.path);
          p.log.info("deleted CommProfile " + pool +
                     (measured ? ": no job waits on its hosts and its measurement is older than " +
                                     std::to_string(kHostnamePoolRetention.count()) + " hours"
                               : ": no job waits on it and it never held a measurement"));
          return Action::await_change();
        }
      }
      // Failures in a row restart with the next demand (the jobs they failed for good
      // have failed; a new or changed job gets its own attempts).
      if (p.profile) {
        ProbeHistory history = probe_history_of(*p.profile);
        if (history.failed_attempts > 0 || history.next_probe_time) {
          history.failed_attempts = 0;
          history.next_probe_time.reset();
          write_status(p, history, kFalse, kReasonNoDemand,
                       "no job waits on pool " + pool +
                           "; the last probe failed: " + history.last_failure_message);
        }
      }
      return Action::await_change();
    }
    return start_probe(p);
  } catch (const ApiError& e) {
    return failed(e.what());
  } catch (const std::exception& e) {
    return failed(e.what());
  }
}

ReconcileResult MeasurementReconciler::start_probe(Pool& p) {
  const ProbePlan plan = plan_probe(p.demands);
  const MeasurementDemand& lead = plan.lead;
  if (!p.profile) {
    json selector = json::object();
    for (const auto& [k, v] : lead.node_selector) selector[k] = v;
    json wanted = {
        {"apiVersion", kApiVersion},
        {"kind", "CommProfile"},
        {"metadata", {{"name", p.name}, {"labels", {{kManagedByLabel, kManagedByValue}}}}},
        {"spec", {{"nodeSelector", selector}}}};
    if (!lead.hostnames.empty()) wanted["spec"]["hostnames"] = lead.hostnames;
    try {
      p.profile = writer_.create(kProfiles, wanted);
      p.log.info("created CommProfile " + p.name + " for " + lead.job);
    } catch (const ApiError& e) {
      if (!e.already_exists()) throw;
      // Created before the cache showed it (an earlier try whose answer was lost).
      return Action::requeue_after(std::chrono::milliseconds(100));
    }
  }
  ProbeHistory history = probe_history_of(*p.profile);
  const int attempts = plan.attempts_allowed;
  if (history.failed_attempts >= attempts) {
    // Each waiting job fails for good at its own policy's limit, and the pool restarts
    // when none waits any more; until then, no probe.
    write_status(
        p, history, kFalse,
        history.last_failure_reason.empty() ? kReasonProbeFailed : history.last_failure_reason,
        "probe of pool " + p.name + " failed " + std::to_string(history.failed_attempts) +
            " times: " + without_final_stop(history.last_failure_message) + "; no more attempts");
    return Action::await_change();
  }
  if (history.next_probe_time && p.now < *history.next_probe_time)
    return Action::requeue_after(
        std::chrono::duration_cast<kube::Clock::duration>(*history.next_probe_time - p.now));
  // Jobs submitted together share the probe: the pool's first demand waits the gather
  // window, and the jobs that arrive in it are in the plan when it ends.
  if (const auto left = gather_left(p.name, p.now); left > kube::Clock::duration::zero())
    return Action::requeue_after(left);
  // The profile from the API server before a probe is created: a cache behind it (a
  // watch dropped and not yet relisted, or another replica's write during a leader
  // handover) may miss the measurement a probe collected a moment ago, and the demand
  // read from it would probe the pool again. One GET per probe; the cache's copy is
  // waited for.
  if (const auto live = get_or_null(live_reader_, p.path);
      live && meta_string(*live, "resourceVersion") != meta_string(*p.profile, "resourceVersion"))
    return Action::requeue_after(std::chrono::milliseconds(100));
  {
    kube::ListOptions probes;
    probes.label_selector = std::string(kRoleLabel) + "=probe";
    // From the API server: another pool's probe created a moment ago must count.
    const std::string why =
        probe_slot_refusal(live_reader_.list(jobs_collection(settings_.probe.ns), probes).items,
                           p.name, lead.ns, settings_.probe);
    if (!why.empty()) {
      // Polled: a slot frees when another pool's probe finishes, which does not wake this
      // pool.
      write_status(p, history, kFalse, kReasonProbeQueued, why);
      return Action::requeue_after(std::chrono::seconds(15));
    }
  }
  const CommPolicy& policy = lead.policy;
  ProbeRequest request;
  request.pool = p.name;
  request.profile_uid = meta_string(*p.profile, "uid");
  request.node_selector = lead.node_selector;
  request.hostnames = lead.hostnames;
  const ProbeTolerations tolerations =
      probe_tolerations(lead.tolerations, policy.spec.probe.toleration_keys);
  request.tolerations = tolerations.kept;
  request.nodes = plan.nodes;
  request.procs_per_node = lead.procs_per_node;
  request.model = lead.model;
  request.also_models = plan.also_models;
  request.policy_probe = policy.spec.probe;
  request.for_job = lead.job;
  std::string sized;  // why the probe is smaller than its demand
  // Under onInsufficientNodes: ignore the probe's pods are created whatever the pool has
  // now: an autoscaler adds nodes for pending pods, and a probe that waited would wait
  // for ever.
  if (p.view.nodes) {
    const ProbePoolFit fit = fit_probe_to_pool(request, *p.view.nodes);
    request.policy_probe.backend = fit.backend;
    const bool sized_to_pool =
        policy.spec.on_insufficient_nodes != InsufficientNodesAction::kIgnore;
    // A one-node probe measures no link: a multi-node demand waits for a second node.
    if (sized_to_pool && fit.nodes < std::min(request.nodes, 2)) {
      write_status(p, history, kFalse, kReasonPoolTooSmall,
                   "pool " + p.name + " has " + describe_pool_count(fit.count, fit.demand) +
                       " for the probe's pods, and a probe of its link needs " +
                       format_nodes(std::min(request.nodes, 2)) +
                       "; it starts when the pool has them" +
                       dropped_tolerations_note(tolerations.dropped, policy));
      return Action::await_change();  // a change of the Nodes brings the pool back
    }
    if (sized_to_pool && fit.nodes < request.nodes) {
      // Told to every job waiting on the pool: the demand is the largest among them.
      sized = " (the jobs waiting on it would have it take up to " + format_nodes(request.nodes) +
              "; the pool has " + describe_pool_count(fit.count, fit.demand) + ")";
      request.nodes = fit.nodes;
    }
  }
  const ProbeObjects objects = build_probe(request, settings_.probe);
  // The jobs whose models the probe times (a model it cannot time beside the lead's
  // waits for the next probe).
  const std::vector<std::string> served =
      jobs_served(p.demands, probe_models_annotation(probe_models(request)));
  const std::string& ns = settings_.probe.ns;
  create_if_absent(writer_, services_collection(ns), objects.service);
  const bool created = create_if_absent(writer_, jobs_collection(ns), objects.job).has_value();
  stop_gathering(p.name);
  const std::string what = "probe " + ns + "/" + probe_job_name(p.name) + " measures pool " +
                           p.name + " on " + format_nodes(request.nodes) + " (the pool's attempt " +
                           std::to_string(history.failed_attempts + 1) + " of " +
                           std::to_string(attempts) + ")" + sized + " for " + joined(served) +
                           dropped_tolerations_note(tolerations.dropped, policy);
  if (created) {
    probes_created_.inc();
    p.log.info(what, {{"reason", "ProbeCreated"}});
    tell_jobs(served, "Normal", "ProbeCreated", what);
  }
  history.next_probe_time.reset();
  write_status(p, history, kTrue, kReasonProbeRunning, what);
  return Action::requeue_after(settings_.probe_poll);
}

ReconcileResult MeasurementReconciler::collect(Pool& p, const json& probe) {
  const std::string uid = meta_string(probe, "uid");
  // A CommProfile the cache does not show (created a moment ago) is asked for: only one
  // that is gone leaves its probe without an owner (the garbage collector follows).
  if (!p.profile) p.profile = get_or_null(live_reader_, p.path);
  ProbeHistory history = p.profile ? probe_history_of(*p.profile) : ProbeHistory{};
  if (!p.profile || (!uid.empty() && history.last_probe_uid == uid)) {
    // Recorded already (a copy the cache still shows, or a delete that failed), or its
    // CommProfile is gone.
    delete_probe(probe);
    return Action::await_change();
  }
  const ProbeOutcome outcome = outcome_of(probe);
  if (outcome.state != ProbeState::kRunning) {
    // Its outcome is recorded once: read from the API server, the profile may say it is
    // already (by this replica's earlier try, or another's), which a cache behind it does
    // not show. One GET per finished probe.
    p.profile = get_or_null(live_reader_, p.path);
    if (!p.profile || (!uid.empty() && probe_history_of(*p.profile).last_probe_uid == uid)) {
      delete_probe(probe);
      return Action::await_change();
    }
    history = probe_history_of(*p.profile);
  }
  const std::string name = settings_.probe.ns + "/" + meta_string(probe, "name");
  const std::string for_job = annotation_of(probe, kProbeForAnnotation);
  const std::string model = annotation_of(probe, kProbeModelAnnotation);
  std::vector<std::string> served = jobs_served(p.demands, model);
  if (served.empty() && !for_job.empty()) served.push_back(for_job);

  // The backoff of the oldest waiting job's policy; the default one when none waits (its
  // jobs were deleted mid-probe: the outcome is recorded all the same).
  RetryStrategy retry;
  int attempts = retry.backoff_limit_count + 1;
  if (!p.demands.empty()) {
    const ProbePlan plan = plan_probe(p.demands);
    retry = plan.lead.policy.spec.retry_strategy;
    attempts = plan.attempts_allowed;
  }
  if (outcome.state == ProbeState::kRunning) {
    write_status(p, history, kTrue, kReasonProbeRunning,
                 "probe " + name + " measures pool " + p.name + " on " + probe_nodes_text(probe) +
                     " (attempt " + std::to_string(history.failed_attempts + 1) + " of " +
                     std::to_string(attempts) + ") for " + joined(served) +
                     (outcome.message.empty() ? "" : ": " + outcome.message) +
                     probe_elapsed_text(probe, p.now));
    return Action::requeue_after(settings_.probe_poll);
  }
  if (auto created = parse_rfc3339(meta_string(probe, "creationTimestamp")))
    probe_duration_.observe(std::chrono::duration<double>(p.now - *created).count());
  history.last_probe_uid = uid;
  // A failed attempt: counted, with the backoff before the next one.
  auto count_failure = [&](const std::string& why, const std::string& message) {
    history.failed_attempts += 1;
    history.last_failure_reason = why;
    history.last_failure_message = message;
    history.last_failure_time = p.now;
    probe_failures(why).inc();
    const std::string what = "probe of pool " + p.name + " failed (attempt " +
                             std::to_string(history.failed_attempts) + " of " +
                             std::to_string(attempts) + "): " + message;
    // The scheduler's message ends its sentence ("... node selector."): one stop, not ".;".
    const std::string clause = without_final_stop(what);
    std::string note;
    if (history.failed_attempts >= attempts) {
      history.next_probe_time.reset();
      note = clause + "; no more attempts";
    } else {
      const auto delay = probe_retry_delay(retry, history.failed_attempts);
      history.next_probe_time = p.now + delay;
      note = clause + "; retrying in " + std::to_string(delay.count()) + " s";
    }
    return note;
  };

  if (outcome.state == ProbeState::kSucceeded && outcome.result) {
    const ProbeResult& result = *outcome.result;
    std::string reason = kReasonProbeSucceeded;
    std::string message = pool_measured(p.name, result.nodes, result.fit.busbw_bytes_per_s,
                                        result.backend, result.transport);
    // A probe that succeeded but still cannot decide the job it ran for (it could not
    // time the job's model, say) counts as a failure: probing again at once would loop.
    CommProfile measured;
    try {
      measured = parse_comm_profile(*p.profile, p.now);
    } catch (const ValidationError&) {
      measured = CommProfile{};
      measured.metadata.name = p.name;
    }
    record_probe_result(measured, result);
    Snapshot after = p.view;
    after.profiles[p.name] = measured;
    for (const MeasurementDemand& d : p.demands) {
      // A Workload's check decides from the profile itself (it has no Failed state).
      if (d.job != for_job || is_workload_demand(d.job)) continue;
      const auto key = parse_key(d.job);
      const auto job =
          key ? get_or_null(reader_, trainingjob_path(key->ns, key->name)) : std::nullopt;
      if (!job) continue;
      if (auto still = measurement_demand(*job, after, settings_.records.get(), p.now);
          still && probe_times_model(model, still->model)) {
        reason = op_reason::kMeasurementInsufficient;
        message = count_failure(reason, "the probe succeeded but job " + d.job +
                                            " still cannot be decided: " + still->gate_message);
      }
    }
    if (reason == kReasonProbeSucceeded) {
      history.failed_attempts = 0;
      history.next_probe_time.reset();
    }
    write_status(p, history, kFalse, reason, message, &result);
    p.log.log(reason == kReasonProbeSucceeded ? LogLevel::kInfo : LogLevel::kWarning, message,
              {{"reason", reason}, {"probe", name}});
    tell_jobs(served, reason == kReasonProbeSucceeded ? "Normal" : "Warning", reason, message);
  } else {
    const std::string why = outcome.reason.empty() ? kReasonProbeFailed : outcome.reason;
    const std::string note = count_failure(why, outcome.message.empty() ? why : outcome.message);
    write_status(p, history, kFalse, why, note);
    p.log.warning(note, {{"reason", why}, {"probe", name}});
    tell_jobs(served, "Warning", why, note);
  }
  // Recorded first, deleted second: a write that failed threw above with the probe still
  // there, and the next reconcile records it (issue #19 item 10).
  delete_probe(probe);
  // Again at once: jobs of another model (or still unmeasured) get the pool's next probe.
  return Action::requeue_after(kAgainNow);
}

kube::Clock::duration MeasurementReconciler::gather_left(const std::string& pool, TimePoint now) {
  const auto window = settings_.probe.gather;
  if (window.count() <= 0) return kube::Clock::duration::zero();
  std::lock_guard lock(gathering_mu_);
  const TimePoint since = gathering_since_.emplace(pool, now).first->second;
  const auto left = since + window - now;
  return left > decltype(left)::zero() ? std::chrono::duration_cast<kube::Clock::duration>(left)
                                       : kube::Clock::duration::zero();
}

void MeasurementReconciler::stop_gathering(const std::string& pool) {
  std::lock_guard lock(gathering_mu_);
  gathering_since_.erase(pool);
}

void MeasurementReconciler::write_status(Pool& p, const ProbeHistory& history,
                                         const std::string& condition_status,
                                         const std::string& reason, const std::string& message,
                                         const ProbeResult* result) {
  if (!p.profile) return;
  auto wanted_status = [&](json object) {
    json status = object.value("status", json::object());
    if (!status.is_object()) status = json::object();
    if (result != nullptr) {
      CommProfile profile;
      try {
        profile = parse_comm_profile(object, p.now);
      } catch (const ValidationError&) {
        // A status commgate cannot read is replaced by the new measurement.
        profile = CommProfile{};
        profile.metadata.name = p.name;
      }
      record_probe_result(profile, *result);
      json measured = to_json(profile).value("status", json::object());
      for (auto& [k, v] : measured.items()) status[k] = v;
    }
    const json probe = to_json(history);
    if (probe.empty())
      status.erase("probe");
    else
      status["probe"] = probe;
    json conditions = status.value("conditions", json::array());
    set_condition(
        conditions,
        Condition{kProbingCondition, condition_status, reason, message, generation_of(object)},
        p.now);
    status["conditions"] = conditions;
    return status;
  };
  // Nothing new for the cached copy: no write.
  if (result == nullptr && wanted_status(*p.profile) == p.profile->value("status", json())) return;
  p.profile = kube::retry_on_conflict([&] {
    json object = live_reader_.get(p.path);
    object["status"] = wanted_status(object);
    return status_writer_.update_status(p.path, object);
  });
  own_writes_.remember(p.path, *p.profile, OwnWrites::Keep::kVersion);
}

ProbeOutcome MeasurementReconciler::outcome_of(const json& probe) const {
  const ProbeOutcome cached =
      read_probe_outcome(probe, pods_of_job(reader_, probe, settings_.probe.ns));
  if (!cached.rank0_pod_missing) return cached;
  // The Job's Complete came through its watch before its pods through theirs (a probe of
  // milliseconds; seen on the sim): the API server has them. One list, only here.
  return read_probe_outcome(probe, pods_of_job(live_reader_, probe, settings_.probe.ns));
}

void MeasurementReconciler::delete_probe(const json& probe) {
  const std::string& ns = settings_.probe.ns;
  const std::string name = meta_string(probe, "name");
  kube::DeleteOptions options;
  options.propagation_policy = "Background";
  // This probe, not one created under its name since it was read: that one stays.
  options.precondition_uid = meta_string(probe, "uid");
  try {
    remove_if_present(writer_, jobs_collection(ns) + "/" + name, options);
  } catch (const ApiError& e) {
    if (e.conflict()) return;  // another probe's, its Service with it
    throw;
  }
  remove_if_present(writer_, services_collection(ns) + "/" + name);
}

void MeasurementReconciler::tell_jobs(const std::vector<std::string>& jobs, const std::string& type,
                                      const std::string& reason, const std::string& note) {
  for (size_t i = 0; i < jobs.size() && i < kJobsTold; ++i) {
    // A Workload is told by its check's own Event and message (Kueue copies it to the job).
    if (is_workload_demand(jobs[i])) continue;
    const auto key = parse_key(jobs[i]);
    if (!key) continue;
    std::string uid;
    if (auto job = get_or_null(reader_, trainingjob_path(key->ns, key->name)))
      uid = meta_string(*job, "uid");
    events_.record({kApiVersion, "TrainingJob", key->ns, key->name, uid}, type, reason, "Probe",
                   note);
  }
}

std::string MeasurementReconciler::metrics_text() const {
  return metrics_.render();
}

// Per pool, from the snapshot: to graph a pool's measurement over time.
std::string MeasurementReconciler::pool_gauges() const {
  std::string out;
  if (const auto snapshot = snapshot_()) {
    const TimePoint now = now_();
    std::string busbw, latency, age;
    for (const auto& [name, profile] : snapshot->profiles) {
      if (!profile.status.link) continue;
      const LinkRecord& l = *profile.status.link;
      const std::string pool = "{pool=\"" + prometheus_escape_label(name) + "\"} ";
      busbw += "commgate_operator_pool_busbw_gbps" + pool + prometheus_number(l.busbw_gbps) + "\n";
      latency += "commgate_operator_pool_latency_seconds" + pool +
                 prometheus_number(round_significant(l.latency_us * 1e-6)) + "\n";
      age += "commgate_operator_pool_measurement_age_seconds" + pool +
             prometheus_number(std::chrono::duration<double>(now - l.measured_at).count()) + "\n";
    }
    out +=
        "# HELP commgate_operator_pool_busbw_gbps A pool's fitted all-reduce bus bandwidth "
        "(CommProfile status.link.busbwGBps), GB/s.\n"
        "# TYPE commgate_operator_pool_busbw_gbps gauge\n" +
        busbw +
        "# HELP commgate_operator_pool_latency_seconds A pool's fitted all-reduce latency.\n"
        "# TYPE commgate_operator_pool_latency_seconds gauge\n" +
        latency +
        "# HELP commgate_operator_pool_measurement_age_seconds Since a pool's link was "
        "measured (the policies' measurementTTL is judged on it).\n"
        "# TYPE commgate_operator_pool_measurement_age_seconds gauge\n" +
        age;
  }
  return out;
}

}  // namespace commgate::op
