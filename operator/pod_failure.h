// Why a training workload failed, in the words of its pods: the failed container's
// termination message (the log's tail, since the workload's containers default to
// terminationMessagePolicy FallbackToLogsOnError) reduced to the one line that says why.
// A Job's own condition says only "Job has reached the specified backoff limit" (issue
// #20, defect 4). Pure: no I/O.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace commgate::op {

// How much of a pod's failure line goes into a TrainingJob's message.
inline constexpr size_t kFailureLineBytes = 300;

// The line of a failed container's log tail that says why it failed:
// - the last Python exception line ("RuntimeError: ...": a line that starts with a dotted
//   name ending in Error, Exception, Exit or Interrupt, after an optional "[rank0]:"
//   prefix) before torchrun's own report of a failed child (its "ERROR:torch.distributed
//   .elastic..." line and ChildFailedError traceback, which say only that a child failed);
// - else the child's last line before that report (python's "can't open file ...");
// - else, when only torchrun's report is left in the tail, its summary ("train.py FAILED
//   (rank 0 ..., exitcode 2 ...)"), saying the rank's own error is earlier in the log;
// - else the last line with a letter or digit (a C++ `what():`, a shell's message).
// Terminal colour sequences and control characters are dropped and the line is cut at
// `max_bytes` on a UTF-8 boundary, with "...". "" when the text has no such line.
std::string failure_line(const std::string& log_tail, size_t max_bytes = kFailureLineBytes);

// The pod whose container failed first (earliest finishedAt; then the lower completion
// index, then the name), as "pod bert-1-x7k2p (node rank 1) exited with code 1:
// RuntimeError: ..."; "" when no container of `pods` terminated with a non-zero code.
// A rank that fails first is usually the cause: the others then fail at their
// collective or rendezvous.
std::string first_pod_failure(const std::vector<nlohmann::json>& pods);

}  // namespace commgate::op
