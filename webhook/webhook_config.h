// The webhook's configuration: built once at start-up from flags, then shared read-only.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

namespace commgate::webhook {

inline constexpr const char* kDefaultOperatorServiceAccount =
    "system:serviceaccount:commgate-system:commgate-operator";

struct WebhookConfig {
  // The operator writes decisions it made with the same decide(); requests from this user
  // are neither re-decided nor checked for gate bypass.
  std::string operator_service_account = kDefaultOperatorServiceAccount;
  // How long one admission may compute before the webhook answers without it: /mutate
  // gates the job (DecisionTimeout), /validate denies (503). Well under the webhook
  // configurations' timeoutSeconds (5 s), which also covers the TLS handshake.
  std::chrono::milliseconds decision_deadline{2000};
  // Threads that run the handlers under the deadline (0: one per core).
  size_t decision_threads = 0;
};

}  // namespace commgate::webhook
