// The annotations commgate writes on a TrainingJob at admission. Users may read them; only
// the operator (or the webhook's own patch) may change them.
#pragma once

namespace commgate::annotation {

inline constexpr const char* kPrefix = "commgate.io/";
// Gate | Admit | Downsize | Warn: the decision taken at admission for the current spec.
inline constexpr const char* kDecision = "commgate.io/decision";
// The decision's reason code (core/decision.h reason::*).
inline constexpr const char* kReason = "commgate.io/reason";
// The spec.numNodes the user asked for, before a downsize.
inline constexpr const char* kRequestedNodes = "commgate.io/requested-nodes";

}  // namespace commgate::annotation
