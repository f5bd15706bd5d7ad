// The reconcile's profile step: the pool's CommProfile, found or created, and a probe's
// result recorded in its status.
#include <utility>

#include "core/field_errors.h"
#include "core/profile_recording.h"
#include "kube/api_error.h"
#include "operator/reconcile_context.h"

namespace commgate::op {

using kube::Action;
using kube::ApiError;
using kube::ReconcileError;
using kube::ReconcileResult;
using nlohmann::json;
using namespace detail;

json TrainingJobReconciler::ensure_profile(Context& ctx, const std::string& pool) {
  enter(ctx, Step::kProfile);
  std::optional<json> profile = get_or_null(reader_, profile_path(pool));
  if (!profile) {
    json selector = json::object();
    for (const auto& [k, v] : ctx.job.spec.node_selector) selector[k] = v;
    const json wanted = {
        {"apiVersion", kApiVersion},
        {"kind", "CommProfile"},
        {"metadata", {{"name", pool}, {"labels", {{kManagedByLabel, kManagedByValue}}}}},
        {"spec", {{"nodeSelector", selector}}}};
    try {
      profile = writer_.create(kProfiles, wanted);
    } catch (const ApiError& e) {
      if (!e.already_exists()) throw;
      // Created by another reconcile (or by this one's earlier try whose answer was lost):
      // from the API server, which has it, not from a cache that may not yet.
      profile = live_reader_.get(profile_path(pool));
    }
  }
  try {
    ctx.overlay = parse_comm_profile(*profile, ctx.now);
  } catch (const ValidationError&) {
    ctx.overlay.reset();  // unusable as it is: decided as having no measurement
  }
  // A measurement this process recorded that the cache has not caught up with yet (the
  // reconcile that wrote it failed later, and the retry came before the watch event):
  // use it rather than probing the pool again.
  if (auto mine = own_writes_.newer_than(profile_path(pool), *profile)) {
    try {
      ctx.overlay = parse_comm_profile(*mine, ctx.now);
    } catch (const ValidationError&) {
      // What this process wrote parses (it was built by to_json): not reached.
    }
  }
  return *profile;
}

std::optional<CommProfile> TrainingJobReconciler::profile_newer_than(Context& ctx,
                                                                     const std::string& pool,
                                                                     const json& seen) {
  if (auto mine = own_writes_.newer_than(profile_path(pool), seen)) {
    try {
      return parse_comm_profile(*mine, ctx.now);
    } catch (const ValidationError&) {
      // What this process wrote parses (it was built by to_json): not reached.
    }
  }
  // From the API server, not the cache: the cache of CommProfiles may lag behind the one
  // of Jobs (a watch dropped and not yet relisted), showing the probe gone but not the
  // measurement it left; one GET per probe about to be created closes that window.
  const std::optional<json> now = get_or_null(live_reader_, profile_path(pool));
  if (!now || version_number(meta_string(*now, "resourceVersion")) <=
                  version_number(meta_string(seen, "resourceVersion")))
    return std::nullopt;
  try {
    return parse_comm_profile(*now, ctx.now);
  } catch (const ValidationError&) {
    return std::nullopt;
  }
}

void TrainingJobReconciler::record_in_profile(Context& ctx, const std::string& pool,
                                              const ProbeResult& result) {
  constexpr int kAttempts = 5;
  const std::string path = profile_path(pool);
  for (int attempt = 1;; ++attempt) {
    json object = reader_.get(path);
    // Our own last write, when the cache has not shown it yet: start from it, or the
    // write would conflict (or, without a resourceVersion, drop it).
    if (auto mine = own_writes_.newer_than(path, object)) {
      object["metadata"]["resourceVersion"] = meta_string(*mine, "resourceVersion");
      object["status"] = mine->value("status", json::object());
    }
    CommProfile profile;
    try {
      profile = parse_comm_profile(object, ctx.now);
    } catch (const ValidationError&) {
      // A status commgate cannot read is replaced by the new measurement.
      profile = CommProfile{};
      profile.metadata.name = pool;
      profile.node_selector = ctx.job.spec.node_selector;
    }
    record_probe_result(profile, result);
    object["status"] = to_json(profile).value("status", json::object());
    try {
      const json written = status_writer_.update_status(path, object);
      profile.metadata.resource_version = meta_string(written, "resourceVersion");
      own_writes_.remember(path, written, OwnWrites::Keep::kObject);
      ctx.overlay = std::move(profile);
      return;
    } catch (const ApiError& e) {
      if (!e.conflict() || attempt >= kAttempts) throw;
    }
  }
}

}  // namespace commgate::op
