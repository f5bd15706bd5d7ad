// The annotations commgate writes on a TrainingJob at admission. Users may read them; only
// commgate (the webhook's own patch, the operator) changes them. The webhook refuses a
// user's UPDATE that changes them without changing the spec (docs/webhook.md).
#pragma once

namespace commgate::annotation {

inline constexpr const char* kPrefix = "commgate.io/";
// Gate | Admit | Downsize | Warn: the decision taken for the current spec (the `Decision`
// printer column).
inline constexpr const char* kDecision = "commgate.io/decision";
// The decision's reason code (core/decision.h reason::*).
inline constexpr const char* kReason = "commgate.io/reason";
// The spec.numNodes the user asked for (before any downsize; the `Requested` column).
inline constexpr const char* kRequestedNodes = "commgate.io/requested-nodes";
// The decision record (core/decision_record.h), compact JSON.
inline constexpr const char* kDecisionRecord = "commgate.io/decision-record";

}  // namespace commgate::annotation
