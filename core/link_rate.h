// The rated speed of the links a probe measured, as each node's kernel reports it (issue
// #24: "the link is slower than it should be"). A ring all-reduce's bus bandwidth
// approaches the rate of the slowest link in the ring; one far below it points at the
// transport (NCCL on sockets where InfiniBand exists, the wrong interface) rather than at
// the network. Pure: probe-job/net_interface.cpp reads the files, this parses them.
//
// Only a physical interface has a rate worth comparing: a pod's eth0 is usually a veth
// (the CNI's), which reports a nominal 10000 Mb/s whatever the host's NIC does, and
// netsim.sh's emulated nodes shape veths with tc below that. Such an interface reports
// no rate (0), and no advice is drawn from it.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace commgate {

// What one node reports about the interface its rank measured.
struct NodeLink {
  double rate_bits_per_s = 0;       // 0: unknown (a virtual interface, or none reported)
  bool infiniband_present = false;  // the node has an InfiniBand (RDMA) device
  bool operator==(const NodeLink&) const = default;
};

// /sys/class/net/IF/speed ("10000\n", Mb/s) in bits/s; nullopt for "-1" (no link), an
// empty or malformed text, or a speed <= 0.
std::optional<double> parse_ethernet_speed(std::string_view text);

// /sys/class/infiniband/DEV/ports/PORT/rate ("100 Gb/sec (4X EDR)\n") in bits/s; nullopt
// for anything else.
std::optional<double> parse_infiniband_rate(std::string_view text);

// A rank's NodeLink on the wire to rank 0 (through the rendezvous store): "<bits>,<0|1>".
std::string encode_node_link(const NodeLink& link);
// nullopt for a text encode_node_link did not write.
std::optional<NodeLink> decode_node_link(std::string_view text);

// The pool's links from its ranks' reports: the slowest known rate (the ring's pace), how
// many ranks knew theirs, and whether any node has InfiniBand.
struct PoolLink {
  double rate_bits_per_s = 0;  // 0 when no rank knew its rate
  int ranks_known = 0;
  int ranks = 0;
  bool infiniband_present = false;
  bool operator==(const PoolLink&) const = default;
};
PoolLink combine_node_links(const std::vector<NodeLink>& by_rank);

class ObjectReader;
// As a probe result and a CommProfile's status write it: {rateBitsPerSecond, ranksKnown,
// ranks, infinibandPresent}; read with field-path errors (the counts 0..100000, the rate
// >= 0), as the CRD's schema checks them.
nlohmann::json to_json(const PoolLink& link);
PoolLink read_pool_link(ObjectReader& object);

}  // namespace commgate
