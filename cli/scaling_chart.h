// The scaling chart of `commgate evaluate --plot` and `kubectl commgate explain --plot`
// (issue #24 "A scaling chart"): one SVG that shows, per node count, the predicted step
// split into compute and exposed communication (stacked bars), the speedup over one node
// against the ideal linear line (a second panel), the policy's limit, the requested,
// admitted and probed counts, and a header naming the job, the pool and the link.
// docs/researcher.md "The scaling chart" says how to read it.
//
// A pure function of a plain struct: no I/O, no clock. The commands gather a ScalingChart
// (cli/evaluate_report.h from the decision, cli/kubectl_plugin.cpp from the stored
// status) and write the text. Every text drawn is XML-escaped; job, pool and policy names
// are user input. Elements a program (or a test) looks for carry ids and data-* attributes:
// id="policy-limit" (data-max-comm-share), id="admitted-marker", id="requested-marker",
// id="probe-marker" (each data-nodes), one <g class="bar" data-nodes="N"
// data-within-policy="true|false|unknown"> per count, id="speedup-line", id="ideal-line",
// id="beyond-extrapolation" (data-from-nodes), id="pool-size" (data-nodes), id="legend".
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace commgate {

struct ScalingPoint {
  int nodes = 0;
  double compute_ms = 0;       // forward + backward + optimizer, no communication
  double exposed_comm_ms = 0;  // what the all-reduces add to the step past the overlap
  double step_ms = 0;          // compute_ms + exposed_comm_ms
  double comm_share = 0;       // exposed_comm_ms / step_ms
  double speedup = 0;          // throughput over 1 node at the same per-GPU batch
  double efficiency = 0;       // speedup / nodes
  // The policy's test at this count (core's meets_policy); nullopt when the policy is not
  // known (explain, where the CommPolicy could not be read).
  std::optional<bool> within_policy;
  bool measured = false;  // the probe's own DDP step at this count, not the model
  // Past maxExtrapolation x the nodes probed: the policy decides no such count from this
  // measurement (decide() gates it, ExtrapolationTooFar); drawn, shaded, as the model has it.
  bool beyond_max_extrapolation = false;
};

struct ScalingChart {
  std::string job;            // "nlp/bert-large"
  std::string pool;           // "pool-1fe15c4a8473beea"
  std::string node_selector;  // "{commgate.io/pool=cpu-1gbe}"
  // The measured link in words: "all-reduce busbw 0.121 GB/s (gloo over socket), latency
  // 20 us"; the title quotes `link_short` ("0.121 GB/s all-reduce busbw").
  std::string link;
  std::string link_short;
  std::string policy;                    // "the built-in default policy", "CommPolicy strict"
  std::optional<double> max_comm_share;  // nullopt: the policy is not known
  std::optional<double> min_scaling_efficiency;
  int max_extrapolation = 0;  // 0: not known (no shading label)
  std::string action;         // "Downsize" (core's to_string(Action))
  std::string reason;         // "OverPolicyDownsized"
  int requested_nodes = 0;
  int admitted_nodes = 0;  // the marker is drawn for Admit, Downsize and Warn only
  int nodes_probed = 0;    // 0: not known
  // The nodes the pool has now (explain lists them through kubectl): a line after that
  // count, id="pool-size" data-nodes="N", since no larger count can run there. 0: not
  // known (`commgate evaluate` offline), not drawn.
  int pool_nodes = 0;
  std::vector<ScalingPoint> points;  // ascending by nodes; gaps are drawn as axis breaks
  std::vector<std::string> notes;    // lines under the chart
};

// The SVG document (UTF-8 text). An empty `points` draws the header and the notes only.
std::string scaling_chart_svg(const ScalingChart& chart);

// `points` as `commgate evaluate -o json` writes them (its `scaling` array): nodes,
// computeMs, exposedCommMs, stepMs, commShare, speedup, efficiency, withinPolicy (null
// when unknown), measured, beyondMaxExtrapolation; numbers to 4 significant digits.
nlohmann::json scaling_points_json(const std::vector<ScalingPoint>& points);

// `text` for XML character data and attribute values: & < > " ' as entities, characters
// XML 1.0 forbids (control characters but tab and newline) and bytes that are not UTF-8
// as U+FFFD.
std::string xml_escaped(std::string_view text);

}  // namespace commgate
