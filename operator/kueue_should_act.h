// Whether commgate's admission check acts on a Workload now, and if not why (a short
// reason for the log line). It acts only while Kueue waits on it: quota reserved, the
// Workload neither finished nor evicted and active, and our entry in
// status.admissionChecks Pending. An entry in Retry is left alone until Kueue resets it
// to Pending (Kueue evicts the Workload, releases its quota and resets every check when it
// sees a Retry); Ready and Rejected are decided.
//
// Models (kubernetes-sigs/kueue v0.19.2):
//   pkg/controller/admissionchecks/provisioning/controller.go  Reconcile's guard (quota
//     reserved, not finished, not evicted) and its filter of the checks it controls;
//   pkg/util/admissioncheck/admissioncheck.go  FilterForController: the Workload's check
//     entries whose AdmissionCheck has our spec.controllerName;
//   pkg/workload/workload.go  HasQuotaReservation, IsActive; pkg/workload/finish/finish.go
//     IsFinished; pkg/workload/evict/evict.go IsEvicted.
// Unlike the provisioning controller, which also syncs its entries in other states,
// commgate acts only on Pending entries (issue #23).
#pragma once

#include <set>
#include <string>
#include <vector>

#include "operator/kueue_workload.h"

namespace commgate::op::kueue {

struct ActDecision {
  bool act = false;
  // Our entries that are Pending, in status order (more than one when a ClusterQueue
  // lists two AdmissionChecks of ours); empty unless act.
  std::vector<std::string> checks;
  // Why not, for the log ("no quota reserved", "our check comm is Retry: ..."); empty when
  // act.
  std::string reason;
};

// `our_checks`: the names of the AdmissionChecks whose spec.controllerName is ours.
ActDecision should_act(const Workload& workload, const std::set<std::string>& our_checks);

}  // namespace commgate::op::kueue
