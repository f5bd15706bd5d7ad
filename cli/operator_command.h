// `commgate operator`: the TrainingJob controller (docs/operator.md). Runs until SIGTERM
// or SIGINT (exit 0 after in-flight reconciles finish and the Lease is released), or
// until it loses the Lease (exit 1: Kubernetes restarts it as a candidate).
#pragma once

#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include "operator/operator_process.h"

namespace commgate {

struct OperatorFlags {
  bool help = false;
  std::string kubeconfig;
  std::string log_format = "text";
  std::string decision_key_file;  // --decision-key-file: loaded by run_operator
  op::OperatorOptions options;    // every field but cluster, log and version
};

// Parses `commgate operator`'s flags. `env` reads an environment variable ("" when
// unset): POD_NAMESPACE (the default of --namespace) and POD_NAME; the caller falls back
// to the host name for an empty pod_name. Throws UsageError (cli/command_input.h) naming
// the flag.
OperatorFlags parse_operator_flags(const std::vector<std::string>& args,
                                   const std::function<std::string(const char*)>& env);

int run_operator(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace commgate
