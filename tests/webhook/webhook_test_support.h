// Builders for the webhook tests: AdmissionReview envelopes made from the real apiserver
// requests in testdata/ (copied from ../shared/fixtures/k8s/admission/) with the object
// replaced by a TrainingJob, and snapshots with a CommProfile for the job's pool.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "tests/support/builders.h"
#include "webhook/admission_review.h"
#include "webhook/policy_source.h"

namespace commgate::webhook::testing {

inline constexpr const char* kOperator = "system:serviceaccount:commgate-system:commgate-operator";

// A real envelope (testdata/<name>.json) with its request fields replaced.
class ReviewBuilder {
 public:
  explicit ReviewBuilder(const std::string& fixture);
  ReviewBuilder& operation(const std::string& op);
  ReviewBuilder& object(nlohmann::json o);
  ReviewBuilder& old_object(nlohmann::json o);
  ReviewBuilder& user(const std::string& name);
  ReviewBuilder& group(const std::string& g);
  ReviewBuilder& resource(const std::string& resource, const std::string& sub_resource = "");
  ReviewBuilder& kind(const std::string& kind);
  ReviewBuilder& dry_run(bool d);
  ReviewBuilder& set(const std::string& pointer, nlohmann::json value);
  nlohmann::json json() const { return doc_; }
  std::string body() const { return doc_.dump(); }
  AdmissionRequest parse() const { return parse_admission_review(body()); }

 private:
  nlohmann::json doc_;
};
// CREATE of a TrainingJob by a user (from the minikube-user Pod CREATE).
ReviewBuilder a_create_of(const nlohmann::json& job);
// UPDATE by a service account, with userInfo.extra (from the capsule Tenant UPDATE).
ReviewBuilder an_update_of(const nlohmann::json& old_job, const nlohmann::json& new_job);
// DELETE with object null (from the node's Pod DELETE).
ReviewBuilder a_delete_of(const nlohmann::json& old_job);

// The pool's CommProfile: link busbw (GB/s), measured at `at`.
nlohmann::json a_profile(double busbw_gbps, TimePoint at, const std::string& name = "pool-all");

Snapshot snapshot_of(std::vector<CommPolicy> policies, std::vector<nlohmann::json> profiles);

// The object after the response's patch (throws when the patch does not apply).
nlohmann::json apply_patch(const nlohmann::json& object, const AdmissionResponse& response);

}  // namespace commgate::webhook::testing
