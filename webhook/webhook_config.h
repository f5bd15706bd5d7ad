// The webhook's configuration: built once at start-up from flags, then shared read-only.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "core/decision_record.h"
#include "core/log.h"

namespace commgate::webhook {

inline constexpr const char* kDefaultOperatorServiceAccount =
    "system:serviceaccount:commgate-system:commgate-operator";

struct WebhookConfig {
  // The operator writes decisions it made with the same decide(); requests from this user
  // are neither re-decided nor checked for gate bypass.
  std::string operator_service_account = kDefaultOperatorServiceAccount;
  // The workload gate (--workload-gate: the chart's webhook.workloadGate.enabled sends Job,
  // CronJob, Pod, JobSet and PyTorchJob writes here). Off: a CommPolicy that sets
  // spec.unmanagedWorkloads is admitted with a warning that it has no effect.
  bool workload_gate = false;
  // Service accounts ("namespace/name", --workload-controller) of the controllers that
  // create the children of workloads the gate reads (the JobSet controller's Jobs, the
  // Kubeflow training operator's pods), besides Kubernetes' own (kube-system's and
  // system: users): their writes of a child are left to its checked parent.
  std::vector<std::string> workload_controllers;
  // How long one admission may compute before the webhook answers without it: /mutate
  // gates the job (DecisionTimeout), /validate denies (503). Well under the webhook
  // configurations' timeoutSeconds (5 s), which also covers the TLS handshake.
  std::chrono::milliseconds decision_deadline{2000};
  // Where the handlers run. Inline (the default): on the server's thread, which then waits
  // as long as the handler takes; a handler is pure computation on the immutable snapshot,
  // bounded since #12 (≤ 1 ms at the CRD's limits), and an answer that took longer than
  // `decision_deadline` is still dropped for the past-the-deadline one. On the pool: on
  // DeadlineRunner's threads, so the server's thread waits at most the deadline even for a
  // handler that never returned; the hand-off (two context switches) cost about a fifth of
  // the CPU of a /mutate (#9, docs/benchmarks.md).
  bool decide_on_pool = false;
  // Threads of that pool (0: one per core); none are started inline.
  size_t decision_threads = 0;
  // Where an admission that failed inside commgate is logged with its exception: the
  // answer itself says only that it failed and its uid (an exception's text is for the
  // admin, not for whoever sent the request).
  Logger log = Logger::discard();
  // Signs the decision records /mutate writes and checks those /validate holds objects to
  // (`--decision-key-file`): a record without a valid signature is decided again. Null:
  // records are neither signed nor checked (docs/security.md "Decision records").
  std::shared_ptr<const RecordAuthenticator> records;
  // commgate_webhook_build_info{version} (the operator has its own): which version runs.
  std::string version;
};

}  // namespace commgate::webhook
