// The webhook's configuration: built once at start-up from flags, then shared read-only.
#pragma once

#include <string>

namespace commgate::webhook {

inline constexpr const char* kDefaultOperatorServiceAccount =
    "system:serviceaccount:commgate-system:commgate-operator";

struct WebhookConfig {
  // The operator writes decisions it made with the same decide(); requests from this user
  // are neither re-decided nor checked for gate bypass.
  std::string operator_service_account = kDefaultOperatorServiceAccount;
};

}  // namespace commgate::webhook
