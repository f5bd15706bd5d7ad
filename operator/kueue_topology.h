// Kueue's compressed topology assignment (kueue.x-k8s.io/v1beta2
// status.admission.podSetAssignments[].topologyAssignment), decoded into one entry per
// topology domain: the node-label value at each level and the pods placed there. With
// topology-aware scheduling (TAS) and a Topology whose lowest level is
// kubernetes.io/hostname, Kueue writes only that level, and the domains are the nodes the
// pods will run on: the nodes the check should probe.
//
// Models (kubernetes-sigs/kueue v0.19.2):
//   apis/kueue/v1beta2/workload_types.go  TopologyAssignment, TopologyAssignmentSlice,
//     TopologyAssignmentSliceLevelValues (universal | individual{prefix, roots, suffix}),
//     TopologyAssignmentSlicePodCounts (universal | individual), and their CEL rules;
//   pkg/util/tas/tas_assignment.go  valueAtIndex, countAtIndex, InternalSeqFrom (the
//     decoding: prefix + roots[i] + suffix, slices in order), the 100000-domain slice limit;
//   pkg/util/tas/tas.go  IsLowestLevelHostname.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/object_reader.h"

namespace commgate::op::kueue {

// The node label of the hostname level (corev1.LabelHostname).
inline constexpr const char* kHostnameLevel = "kubernetes.io/hostname";

// The most domains one assignment may decode to. Kueue chunks its own encoding at 100000
// domains per slice (maxDomainsPerTopologyAssignmentSlice); a slice of universal values
// and a universal pod count could otherwise claim 2^31 domains in a few bytes. commgate
// decides for at most 10000 nodes (kMaxNodes), so nothing real comes near it.
inline constexpr int64_t kMaxTopologyDomains = 100000;

struct TopologyDomain {
  std::vector<std::string> values;  // one per level, highest first
  int64_t pod_count = 0;

  bool operator==(const TopologyDomain&) const = default;
};

struct TopologyAssignment {
  std::vector<std::string> levels;      // node label keys, highest level first
  std::vector<TopologyDomain> domains;  // every slice's domains, in order

  // True when the lowest level is kubernetes.io/hostname: each domain is one node.
  bool lowest_level_is_hostname() const;
  // The lowest-level value of each domain (the node names when lowest_level_is_hostname),
  // in the assignment's order; empty when the lowest level is not the hostname.
  std::vector<std::string> hostnames() const;
  // The pods of every domain added up.
  int64_t pod_count() const;
};

// Reads `key` (topologyAssignment) of a PodSetAssignment through its reader, recording
// every malformed part at its field path in the reader's errors (one pass, all errors):
// slices whose valuesPerLevel do not match the levels, roots or individual pod counts
// whose length is not domainCount, both or neither of universal/individual, counts below
// 1, more than kMaxTopologyDomains domains. nullopt when absent or malformed.
std::optional<TopologyAssignment> read_topology_assignment(ObjectReader& pod_set_assignment,
                                                           const std::string& key);

// The same for a topologyAssignment object on its own, whose field path is `path`
// ("status.admission.podSetAssignments[0].topologyAssignment"); throws ValidationError
// naming each malformed field.
TopologyAssignment decode_topology_assignment(const nlohmann::json& assignment,
                                              const std::string& path);

}  // namespace commgate::op::kueue
