// `commgate evaluate`: the decision without a cluster. Reads a TrainingJob, a policy
// (or the embedded default) and a measurement (a probe result or CommProfile file, or
// a live local probe), and prints the predicted table and the verdict.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace commgate {

// Exit codes (docs/cli.md).
inline constexpr int kExitAdmitted = 0;       // admit, downsize or warn
inline constexpr int kExitDenied = 1;         // at least one job denied
inline constexpr int kExitBadInput = 2;       // usage or a file that does not parse
inline constexpr int kExitNoMeasurement = 3;  // the local probe is missing or failed
inline constexpr int kExitGated = 4;  // none denied, at least one would wait (Gate): the
                                      // measurement does not cover it, or its pool is small

int run_evaluate(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace commgate
