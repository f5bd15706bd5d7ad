// The model of a job commgate did not create (a PyTorchJob, TrainJob, JobSet or Job that
// Kueue queues), read from the job's annotations: a Kueue Workload carries no model. The
// same fields and rules as a TrainingJob's spec.model (core/training_job.h ModelSpec),
// one annotation each:
//   commgate.io/parameters      gradient element count, a quantity: 350M, 7G, 1.3e9
//   commgate.io/gradient-dtype  fp32 | fp16 | bf16 (default fp32)
//   commgate.io/batch-size      per-process batch the probe times, 1..1048576 (default 32)
//   commgate.io/optimizer       sgd | sgd-momentum | adam | adamw | adagrad | rmsprop
//                               (default adamw)
//   commgate.io/torchscript     optional: a TorchScript model path the probe can read
//   commgate.io/input-shape     its per-sample input shape, "3,224,224" (required with
//                               torchscript, as spec.model.inputShape is)
// A job with none of them names no model (Kind::kNone: the CommPolicy says what then); one
// with any of them must name the parameters.
// Namespace defaults: the same annotations on the job's Namespace (set by an admin: a
// namespace `edit` user cannot change a Namespace) stand for those the job does not carry.
// The job's own win, key by key. A Namespace's commgate.io/parameters opts every job there
// in; its other annotations alone do not (they complete the jobs that opt in). An error in
// a Namespace's value names it: Namespace nlp metadata.annotations[commgate.io/batch-size]. Errors
// name the annotation as Kubernetes' field paths name a map key:
// metadata.annotations[commgate.io/parameters]: ... An unknown commgate.io/ annotation within two
// edits of one of these is reported with a "did you mean", so that a misspelt opt-in is not read as
// no opt-in.
//
// Models: issue #23 "Which model"; the rules of core/training_job.cpp read_model.
#pragma once

#include <map>
#include <string>

#include "core/field_errors.h"
#include "core/kueue_queues.h"
#include "core/training_job.h"

namespace commgate::op::kueue {

namespace model_annotation {
inline constexpr const char* kParameters = kKueueParametersAnnotation;  // core/kueue_queues.h
inline constexpr const char* kGradientDtype = "commgate.io/gradient-dtype";
inline constexpr const char* kBatchSize = "commgate.io/batch-size";
inline constexpr const char* kOptimizer = "commgate.io/optimizer";
inline constexpr const char* kTorchScript = "commgate.io/torchscript";
inline constexpr const char* kInputShape = "commgate.io/input-shape";
}  // namespace model_annotation

struct ModelFromAnnotations {
  enum class Kind {
    kNone,     // no model annotation: the job did not opt in
    kModel,    // `model` holds it
    kInvalid,  // `errors` says what is wrong, one line per annotation
  };
  Kind kind = Kind::kNone;
  ModelSpec model;
  FieldErrors errors;
};

// `annotations`: the job's metadata.annotations; `namespace_defaults`: the commgate.io/
// annotations of its Namespace `namespace_name`.
ModelFromAnnotations model_from_annotations(
    const std::map<std::string, std::string>& annotations,
    const std::map<std::string, std::string>& namespace_defaults = {},
    const std::string& namespace_name = "");

}  // namespace commgate::op::kueue
