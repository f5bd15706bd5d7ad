// What a decision reads besides the job: the CommPolicies, the CommProfiles and the
// namespaces' labels, as one immutable value. The webhook's policy sources and the
// operator's caches build it; decide_for_job (core/job_decision.h) reads it.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/comm_policy.h"
#include "core/comm_profile.h"
#include "core/time_format.h"

namespace commgate {

struct Snapshot {
  std::vector<CommPolicy> policies;
  std::map<std::string, CommProfile> profiles;  // by metadata.name (pool_name())
  // Labels by namespace name, for policies' namespaceSelector. A namespace not listed
  // reads as having no labels.
  std::map<std::string, std::map<std::string, std::string>> namespace_labels;
  TimePoint loaded_at{};  // when this snapshot was built (for the snapshot-age metric)

  const CommProfile* profile(const std::string& name) const;
  const std::map<std::string, std::string>& labels_of(const std::string& ns) const;
};

}  // namespace commgate
