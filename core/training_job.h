// TrainingJob (commgate.io/v1alpha1, namespaced, short name tj): what a researcher
// submits. docs/api.md documents every field.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/model_names.h"
#include "core/object_meta.h"

namespace commgate {

inline constexpr const char* kApiGroup = "commgate.io";
inline constexpr const char* kApiVersion = "commgate.io/v1alpha1";
inline constexpr int kMaxNodes = 10000;

struct ModelSpec {
  double parameters = 0;                // gradient element count
  std::string gradient_dtype = "fp32";  // fp32 | fp16 | bf16: what DDP all-reduces
  std::string torch_script;             // path inside the probe image or a volume
  std::vector<int64_t> input_shape;     // per-sample input shape for torch_script
  int batch_size = 32;                  // per-process batch used by the probe
  // The training optimizer; its step is part of the compute the probe times.
  // sgd | sgd-momentum | adam | adamw | adagrad | rmsprop (kOptimizers, core/model_names.h).
  std::string optimizer = kDefaultOptimizer;
  std::optional<double> step_time_hint_ms;

  double gradient_bytes() const;
};

// The most a model's batchSize may be (spec.model.batchSize, and the Kueue check's
// commgate.io/batch-size annotation).
inline constexpr int kMaxModelBatchSize = 1 << 20;

// What is wrong with a model's parameter count (a quantity >= 1, as read): "" when it is a
// whole number of gradient elements up to 1e15. spec.model.parameters and the Kueue check's
// commgate.io/parameters annotation both hold it to this.
std::string model_parameters_problem(double parameters);

struct RunPolicy {
  std::optional<int64_t> backoff_limit;
  std::optional<int64_t> active_deadline_seconds;
  std::optional<int64_t> ttl_seconds_after_finished;
};

struct TrainingJobSpec {
  int num_nodes = 0;
  int min_nodes = 1;
  // What the decision's messages call the request's fields: those a researcher would
  // change. A request that is not a TrainingJob names its own (a Kueue Workload, which
  // Kueue admits at its node count or not at all: "the Workload's node count", the pods'
  // GPUs, the pod template's nodeSelector; the trial of 2026-12-07 found TrainingJob
  // fields a PyTorchJob's researcher cannot set).
  std::string min_nodes_field = "spec.minNodes";
  std::string procs_per_node_field = "spec.numProcPerNode";
  std::string node_selector_field = "spec.nodeSelector";
  std::string tolerations_field = "spec.tolerations";
  std::string step_time_hint_field = "spec.model.stepTimeHintMs";  // "": none can be given
  // False for a request admitted at its count or not at all (a Kueue Workload): an over-
  // policy decision names the largest count that passes instead of a downsize.
  bool resizable = true;
  int num_proc_per_node = 1;
  bool suspend = false;
  std::map<std::string, std::string> node_selector;
  // When not empty, the pool is only the selector's nodes whose kubernetes.io/hostname
  // label is one of these, sorted: a request that is not a TrainingJob (a Kueue Workload
  // whose hosts topology-aware scheduling assigned) is measured on them
  // (pool_name(node_selector, hostnames)). A TrainingJob has none.
  std::vector<std::string> hostnames;
  nlohmann::json tolerations = nlohmann::json::array();  // []corev1.Toleration, validated
  ModelSpec model;
  nlohmann::json pod_template;  // corev1.PodTemplateSpec, kept verbatim
  // The accelerators one pod of the template asks for (core/pod_requests.h), read even
  // where the template is not kept: empty when it names none (the operator then adds
  // numProcPerNode nvidia.com/gpu on a GPU pool).
  std::map<std::string, double> template_accelerators;
  std::string policy_ref;  // CommPolicy name, optional
  RunPolicy run_policy;
};

struct TrainingJob {
  ObjectMeta metadata;
  TrainingJobSpec spec;
  nlohmann::json status;  // kept verbatim; the operator owns it
};

enum class ObjectSource {
  kManifest,   // a file or kubectl input: metadata.name is required
  kAdmission,  // an apiserver request: generateName may stand in for the name
  // An object already stored (the operator's read): metadata.name is required, and a
  // name the workload cannot take is not a parse error (workload_name_problem below: the
  // operator fails such a job with reason InvalidWorkloadName instead of InvalidSpec).
  kStored,
};

// What the parse keeps of the parts it validates but does not interpret.
enum class Verbatim {
  kKeep,  // spec.template and status copied into the TrainingJob
  // Left empty (null and null): for deciders that read only what decide() and the
  // decision record read (the webhook's handlers). The copy of the pod template was a
  // tenth of /mutate's handler time (#9). Validation and its errors are the same.
  kSkip,
};

// Throws ValidationError naming the field path of every problem. For kManifest and
// kAdmission that includes metadata.name when workload_name_problem finds one (a name
// known: under admission, a CREATE with only generateName reaches /mutate without one;
// the apiserver fills it in before the validating webhooks run, so /validate sees it).
TrainingJob parse_training_job(const nlohmann::json& doc,
                               ObjectSource source = ObjectSource::kManifest,
                               Verbatim verbatim = Verbatim::kKeep);

// Why the workload cannot be created under the TrainingJob's name ("" when it can), in
// words for a condition or a field error on metadata.name: the Service is named after it,
// so it must be a DNS-1035 label (lower-case letters, digits and '-', starting with a
// letter, ending alphanumeric), and the pods' hostnames `<name>-<index>` must fit a
// 63-character DNS label for every index below numNodes. The API server would refuse the
// Service or the pods (422) otherwise, and retrying cannot help.
std::string workload_name_problem(const TrainingJob& job);

// Bytes per gradient element for a dtype name; 0 for an unknown name.
int dtype_bytes(const std::string& dtype);

}  // namespace commgate
