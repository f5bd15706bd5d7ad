// Dynamic admission as kube-apiserver runs it (k8s.io/apiserver pkg/admission/plugin/
// webhook/{mutating,validating}): the webhooks of the MutatingWebhookConfiguration and
// ValidatingWebhookConfiguration objects in the store, matched by their rules
// (admission_rules.h), called with an AdmissionReview v1 over HTTPS (webhook_caller.h),
// their answers checked and turned into patches, warnings, refusals and failures with
// kube-apiserver's Status bodies and wording; and, when enabled, the built-in validating
// plugin OwnerReferencesPermissionEnforcement ahead of the validating webhooks, as
// kube-apiserver orders its chain. docs/testing.md says what is left out.
#pragma once

#include <cstddef>
#include <deque>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/admission_rules.h"
#include "sim/object_store.h"
#include "sim/service_directory.h"

namespace commgate::sim {

class Admission {
 public:
  // `authorize` answers the plugins' own authorization checks (AlwaysAllow when empty).
  Admission(const ObjectStore& store, const ServiceDirectory& services,
            AdmissionPlugins plugins = {}, Authorizer authorize = {});

  // The mutating webhooks, configurations in name order and each one's webhooks in order,
  // each seeing the object as the ones before it patched it. Returns the object to go on
  // with (a.object when nothing patched it). Throws ApiError: a refusal, a failed call
  // under failurePolicy Fail (500), a patch that does not apply (500), a dry run a
  // webhook with side effects would see (400).
  nlohmann::json mutate(const AdmissionAttributes& a, std::vector<std::string>& warnings) const;

  // The enabled built-in plugins (OwnerReferencesPermissionEnforcement: its 403 thrown as
  // ApiError), then the validating webhooks. kube-apiserver calls the webhooks in parallel
  // and reports the first error it collects; the sim calls every matching one in name
  // order and throws the first error, after collecting every warning.
  void validate(const AdmissionAttributes& a, std::vector<std::string>& warnings) const;

  // The authorization checks the plugins made (who, for what, the answer), oldest first,
  // the newest 50,000: they use RBAC grants without being requests (rbac_usage()).
  std::vector<AuthorizationCheck> authorization_checks() const;

 private:
  // Every webhook of every configuration of this resource, configurations in name order.
  std::vector<nlohmann::json> webhooks(const std::string& plural) const;
  // rules, namespaceSelector (labels from the store), objectSelector.
  bool matches(const nlohmann::json& hook, const AdmissionAttributes& a) const;
  // One webhook called under its failurePolicy: the object after its patch (mutating).
  nlohmann::json call(const nlohmann::json& hook, const AdmissionAttributes& a, bool mutating,
                      std::vector<std::string>& warnings) const;

  const ObjectStore& store_;
  const ServiceDirectory& services_;
  AdmissionPlugins plugins_;
  Authorizer authorize_;
  mutable std::mutex checks_mu_;
  mutable std::deque<AuthorizationCheck> checks_;
};

// The `Warning` header value for one admission warning: `299 - "<text>"` (RFC 7234 form,
// with the text's quotes and backslashes escaped, as k8s.io/apiserver pkg/warning).
std::string warning_header_value(const std::string& text);

}  // namespace commgate::sim
