#include "sim/job_controller.h"

#include <algorithm>

#include "sim/api_status.h"
#include "sim/garbage_collection.h"
#include "sim/json_fields.h"
#include "sim/scheduler.h"

namespace commgate::sim {

using nlohmann::json;

namespace {

int index_of(const json& pod) {
  const std::string v = str(at(at(at(pod, "metadata"), "annotations"), kJobCompletionIndex));
  try {
    return v.empty() ? -1 : std::stoi(v);
  } catch (const std::exception&) {
    return -1;
  }
}

json condition(const std::string& type, const std::string& reason, const std::string& message,
               const std::string& now) {
  return {{"type", type},       {"status", "True"},     {"reason", reason},
          {"message", message}, {"lastProbeTime", now}, {"lastTransitionTime", now}};
}

}  // namespace

std::string format_completed_indexes(const std::set<int>& indexes) {
  std::string out;
  for (auto it = indexes.begin(); it != indexes.end();) {
    const int first = *it;
    int last = first;
    for (++it; it != indexes.end() && *it == last + 1; ++it) last = *it;
    if (!out.empty()) out += ",";
    out += std::to_string(first);
    if (last != first) out += "-" + std::to_string(last);
  }
  return out;
}

std::set<int> parse_completed_indexes(const std::string& text) {
  std::set<int> out;
  std::size_t pos = 0;
  while (pos < text.size()) {
    const std::size_t comma = std::min(text.find(',', pos), text.size());
    const std::string part = text.substr(pos, comma - pos);
    const auto dash = part.find('-');
    try {
      const int a = std::stoi(part.substr(0, dash));
      const int b = dash == std::string::npos ? a : std::stoi(part.substr(dash + 1));
      for (int i = a; i <= b; ++i) out.insert(i);
    } catch (const std::exception&) {
      // Not ours to repair: a malformed range is skipped.
    }
    pos = comma + 1;
  }
  return out;
}

std::vector<int> indexes_to_create(int completions, int parallelism, const std::set<int>& succeeded,
                                   const std::set<int>& active) {
  std::vector<int> out;
  int running = static_cast<int>(active.size());
  for (int i = 0; i < completions && running < parallelism; ++i) {
    if (succeeded.count(i) > 0 || active.count(i) > 0) continue;
    out.push_back(i);
    ++running;
  }
  return out;
}

json pod_for_job(const json& job, int index) {
  const json& meta = job["metadata"];
  const std::string name = str(meta["name"]), uid = str(meta["uid"]);
  const json& tmpl = at(at(job, "spec"), "template");
  json labels =
      at(at(tmpl, "metadata"), "labels").is_object() ? tmpl["metadata"]["labels"] : json::object();
  json annotations = at(at(tmpl, "metadata"), "annotations").is_object()
                         ? tmpl["metadata"]["annotations"]
                         : json::object();
  for (const char* k : {"batch.kubernetes.io/controller-uid", "controller-uid"}) labels[k] = uid;
  for (const char* k : {"batch.kubernetes.io/job-name", "job-name"}) labels[k] = name;
  json spec = at(tmpl, "spec").is_object() ? tmpl["spec"] : json::object();
  std::string generate = name + "-";
  if (index >= 0) {
    const std::string idx = std::to_string(index);
    labels[kJobCompletionIndex] = idx;
    annotations[kJobCompletionIndex] = idx;
    generate = name + "-" + idx + "-";
    spec["hostname"] = name + "-" + idx;
    if (spec.contains("containers") && spec["containers"].is_array())
      for (auto& c : spec["containers"]) {
        json env = json::array();
        env.push_back({{"name", "JOB_COMPLETION_INDEX"},
                       {"valueFrom",
                        {{"fieldRef",
                          {{"apiVersion", "v1"},
                           {"fieldPath", std::string("metadata.annotations['") +
                                             kJobCompletionIndex + "']"}}}}}});
        if (c.contains("env") && c["env"].is_array())
          for (const auto& e : c["env"]) env.push_back(e);
        c["env"] = env;
      }
  }
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata",
           {{"generateName", generate},
            {"namespace", str(meta["namespace"])},
            {"labels", labels},
            {"annotations", annotations},
            {"ownerReferences",
             {{{"apiVersion", "batch/v1"},
               {"kind", "Job"},
               {"name", name},
               {"uid", uid},
               {"controller", true},
               {"blockOwnerDeletion", true}}}}}},
          {"spec", spec}};
}

bool job_finished(const json& job) {
  return condition_true(job, "Complete") || condition_true(job, "Failed");
}

JobController::JobController(ObjectStore& store)
    : store_(store),
      jobs_(*store.find_resource("batch", "v1", "jobs")),
      pods_(*store.find_resource("", "v1", "pods")),
      loop_(store, {jobs_, pods_}, [this]() -> std::optional<TimePoint> {
        try {
          return sync_once();
        } catch (const std::exception&) {
          return Clock::now() + std::chrono::milliseconds(100);  // retry after a store error
        }
      }) {}

JobController::~JobController() {
  stop();
}

void JobController::start() {
  loop_.start();
}

void JobController::stop() {
  loop_.stop();
}

std::optional<TimePoint> JobController::sync_once() {
  const auto jobs = store_.list(jobs_, "", {}).items;
  auto pods = store_.list(pods_, "", {}).items;
  std::map<std::string, std::vector<json>> owned;  // job uid -> pods
  for (auto& p : pods) {
    const std::string job_uid = controller_uid(p, "Job");  // a pod has at most one controller
    if (!job_uid.empty()) owned[job_uid].push_back(std::move(p));
  }
  std::optional<TimePoint> next;
  std::set<std::string> live;
  for (const auto& job : jobs) {
    const std::string uid = str(job["metadata"]["uid"]);
    live.insert(uid);
    try {
      auto due = reconcile(job, owned[uid]);
      if (due && (!next || *due < *next)) next = due;
    } catch (const ApiError&) {
      // Changed meanwhile: its event brings another pass.
    }
  }
  for (auto it = counted_.begin(); it != counted_.end();)
    it = live.count(it->first) > 0 ? std::next(it) : counted_.erase(it);
  return next;
}

std::optional<TimePoint> JobController::reconcile(const json& job, const std::vector<json>& pods) {
  if (is_deleting(job)) return std::nullopt;
  const json& meta = job["metadata"];
  const std::string ns = str(meta["namespace"]), name = str(meta["name"]), uid = str(meta["uid"]);
  const json& spec = at(job, "spec");
  const TimePoint now = Clock::now();
  const std::string now_text = format_rfc3339(now);
  json status = at(job, "status").is_object() ? job["status"] : json::object();

  if (job_finished(job)) {
    if (!at(spec, "ttlSecondsAfterFinished").is_number_integer()) return std::nullopt;
    std::string finished = str(at(status, "completionTime"));
    if (finished.empty() && at(status, "conditions").is_array())
      for (const auto& c : status["conditions"])
        if (str(at(c, "type")) == "Failed") finished = str(at(c, "lastTransitionTime"));
    const auto at_time = parse_rfc3339(finished).value_or(now) +
                         std::chrono::seconds(spec["ttlSecondsAfterFinished"].get<int>());
    if (at_time > now) return at_time;
    store_.remove(jobs_, ns, name, {Propagation::kBackground});
    return std::nullopt;
  }

  const bool indexed = str(at(spec, "completionMode")) == "Indexed";
  const bool has_completions = at(spec, "completions").is_number_integer();
  const int completions = int_or(at(spec, "completions"), 1);
  const int parallelism = int_or(at(spec, "parallelism"), 1);
  const int backoff_limit = int_or(at(spec, "backoffLimit"), 6);
  const bool on_failure = str(at(at(at(spec, "template"), "spec"), "restartPolicy")) == "OnFailure";

  // Count newly finished pods once (by uid), into the persisted totals.
  int succeeded = int_or(at(status, "succeeded"), 0);
  int failed = int_or(at(status, "failed"), 0);
  std::set<int> done_indexes = parse_completed_indexes(str(at(status, "completedIndexes")));
  std::set<std::string>& counted = counted_[uid];
  std::vector<const json*> active;
  std::set<int> active_indexes;
  int restarts = 0, ready = 0;
  for (const auto& p : pods) {
    const std::string puid = str(p["metadata"]["uid"]);
    const std::string phase = str(at(at(p, "status"), "phase"));
    if (phase == "Succeeded" || phase == "Failed") {
      if (counted.insert(puid).second) {
        if (phase == "Succeeded") {
          ++succeeded;
          if (index_of(p) >= 0) done_indexes.insert(index_of(p));
        } else {
          ++failed;
        }
      }
      continue;
    }
    if (is_deleting(p)) continue;
    active.push_back(&p);
    active_indexes.insert(index_of(p));
    if (condition_true(p, "Ready")) ++ready;
    const json& cs = at(at(p, "status"), "containerStatuses");
    if (cs.is_array())
      for (const auto& c : cs) restarts += int_or(at(c, "restartCount"), 0);
  }

  json conditions = at(status, "conditions").is_array() ? status["conditions"] : json::array();
  auto delete_pod = [&](const json& pod) {
    try {
      store_.remove(pods_, ns, str(pod["metadata"]["name"]), {Propagation::kBackground});
    } catch (const ApiError&) {
    }
  };
  auto delete_active = [&] {
    for (const json* p : active) delete_pod(*p);
    active.clear();
    ready = 0;
  };
  if (!status.contains("startTime") && !at(spec, "suspend").is_boolean())
    status["startTime"] = now_text;
  if (at(spec, "suspend").is_boolean() && spec["suspend"].get<bool>()) {
    delete_active();
    bool have = false;
    for (const auto& c : conditions) have = have || str(at(c, "type")) == "Suspended";
    if (!have)
      conditions.push_back(condition("Suspended", "JobSuspended", "Job suspended", now_text));
  } else {
    if (!status.contains("startTime")) status["startTime"] = now_text;
    json kept = json::array();
    for (const auto& c : conditions)
      if (str(at(c, "type")) != "Suspended") kept.push_back(c);
    conditions = kept;
  }
  const bool suspended = at(spec, "suspend").is_boolean() && spec["suspend"].get<bool>();

  std::optional<TimePoint> due;
  std::string fail_reason, fail_message;
  const int failures = failed + (on_failure ? restarts : 0);
  if (failures > backoff_limit) {
    fail_reason = "BackoffLimitExceeded";
    fail_message = "Job has reached the specified backoff limit";
  } else if (!suspended && at(spec, "activeDeadlineSeconds").is_number_integer()) {
    const auto deadline = parse_rfc3339(str(status["startTime"])).value_or(now) +
                          std::chrono::seconds(spec["activeDeadlineSeconds"].get<int>());
    if (now >= deadline) {
      fail_reason = "DeadlineExceeded";
      fail_message = "Job was active longer than specified deadline";
    } else {
      due = deadline;
    }
  }
  const bool complete =
      indexed || has_completions
          ? (indexed ? static_cast<int>(done_indexes.size()) : succeeded) >= completions
          : succeeded >= 1 && active.empty();
  if (!fail_reason.empty()) {
    delete_active();
    // kube 1.31+: FailureTarget first, Failed once no pod is left running (at once here).
    conditions.push_back(condition("FailureTarget", fail_reason, fail_message, now_text));
    conditions.push_back(condition("Failed", fail_reason, fail_message, now_text));
    due = std::nullopt;
  } else if (complete) {
    delete_active();
    conditions.push_back(condition("SuccessCriteriaMet", "CompletionsReached",
                                   "Reached expected number of succeeded pods", now_text));
    conditions.push_back(condition("Complete", "CompletionsReached",
                                   "Reached expected number of succeeded pods", now_text));
    status["completionTime"] = now_text;
    due = std::nullopt;
  } else if (!suspended) {
    // More pods active than the Job wants (its parallelism or completions lowered, as
    // upstream's manageJob handles with activePodsForRemoval): the excess is deleted, an
    // Indexed Job's pods of an index past completions first, then the highest indexes.
    const int done = indexed ? static_cast<int>(done_indexes.size()) : succeeded;
    const int want_active =
        has_completions || indexed ? std::min(parallelism, completions - done) : parallelism;
    std::stable_sort(active.begin(), active.end(),
                     [](const json* a, const json* b) { return index_of(*a) > index_of(*b); });
    const auto keep = static_cast<std::size_t>(std::max(want_active, 0));
    std::size_t excess = active.size() > keep ? active.size() - keep : 0;
    for (std::size_t i = 0; i < active.size();) {
      const int index = index_of(*active[i]);
      if (excess == 0 && !(indexed && index >= completions)) {
        ++i;
        continue;
      }
      delete_pod(*active[i]);
      active_indexes.erase(index);
      if (condition_true(*active[i], "Ready")) --ready;
      active.erase(active.begin() + static_cast<std::ptrdiff_t>(i));
      if (excess > 0) --excess;
    }
    std::vector<int> create;
    if (indexed) {
      create = indexes_to_create(completions, parallelism, done_indexes, active_indexes);
    } else {
      const int want = has_completions ? std::min(parallelism, completions - succeeded)
                                       : (succeeded > 0 ? 0 : parallelism);
      for (int i = static_cast<int>(active.size()); i < want; ++i) create.push_back(-1);
    }
    if (create.size() > kMaxPodCreatePerSync) create.resize(kMaxPodCreatePerSync);
    for (int index : create) store_.create(pods_, ns, pod_for_job(job, index));
    status["active"] = static_cast<int>(active.size() + create.size());
  }
  if (!fail_reason.empty() || complete || suspended) status["active"] = 0;
  status["succeeded"] = succeeded;
  status["failed"] = failed;
  status["ready"] = ready;
  status["terminating"] = 0;
  if (indexed && !done_indexes.empty())
    status["completedIndexes"] = format_completed_indexes(done_indexes);
  status["uncountedTerminatedPods"] = json::object();
  if (!conditions.empty()) status["conditions"] = conditions;
  if (status != at(job, "status")) {
    store_.mutate(jobs_, ns, name, WritePart::kStatus, [&](const json& current) {
      if (str(current["metadata"]["uid"]) != uid) throw not_found(jobs_, name);
      json next = current;
      next["status"] = status;
      return next;
    });
  }
  return due;
}

}  // namespace commgate::sim
