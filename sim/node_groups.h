// The nodes commgate-sim starts with, from its flags: groups of nodes with their GPU
// count, labels (a pool is a nodeSelector) and network namespaces (scripts/netsim.sh
// with NETSIM_PREFIX=<prefix>: node j of a group is netns <prefix>-n<j> at 198.18.0.<j+1>,
// its pods in namespaces of their own with addresses of podCIDR 198.19.<j>.0/24). Pure parsing, unit-tested; main.cpp adds the nodes.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "sim/cluster.h"

namespace commgate::sim {

struct NodeGroup {
  int count = 0;
  int gpus = 0;
  std::string netns_prefix;  // "": host network
  std::map<std::string, std::string> labels;
};

// "K=V[,K=V...]" (the --node-labels flag, as the kubelet's). Keys are label keys
// ([prefix/]name), values label values (63 characters of [A-Za-z0-9._-], alphanumeric
// at both ends, or empty). Throws std::invalid_argument naming the bad entry.
std::map<std::string, std::string> parse_node_labels(const std::string& text);

// "N[,gpus=G][,netns=PREFIX][,label=K=V]..." (the repeatable --node-group flag), e.g.
// "3,netns=cgslow,label=commgate.io/pool=slow". Throws std::invalid_argument naming the
// bad item.
NodeGroup parse_node_group(const std::string& text);

// The nodes of `groups` in order, named sim-node-0, sim-node-1, ... across groups; node
// j of a group with a netns prefix gets netns "<prefix>-n<j>", address 198.18.0.<j+1> and
// podCIDR 198.19.<j>.0/24.
std::vector<NodeSpec> node_specs(const std::vector<NodeGroup>& groups);

}  // namespace commgate::sim
