// commgate-sim's node flags (sim/node_groups.h): --node-labels, --node-group, and the
// nodes they make (names across groups, netns and addresses within a group).
#include "sim/node_groups.h"

#include <gtest/gtest.h>

namespace commgate::sim {
namespace COMMGATE_TEST_UNIT {

using Labels = std::map<std::string, std::string>;

TEST(ParseNodeLabels, kubelet_style_pairs) {
  EXPECT_EQ(parse_node_labels("commgate.io/pool=slow"), (Labels{{"commgate.io/pool", "slow"}}));
  EXPECT_EQ(parse_node_labels("a=1,b=,zone=eu-west"),
            (Labels{{"a", "1"}, {"b", ""}, {"zone", "eu-west"}}));
}

TEST(ParseNodeLabels, refuses_what_is_not_a_label_and_names_it) {
  const std::pair<std::string, std::string> cases[] = {
      {"novalue", "\"novalue\" must be KEY=VALUE"},
      {"=v", "is not a label key"},
      {"Bad_Prefix.io/x=1", "is not a label key"},
      {"k=-leading-dash", "is not a label value"},
      {"k=" + std::string(64, 'a'), "is not a label value"},
      {"a=1,,b=2", "\"\" must be KEY=VALUE"},
  };
  for (const auto& [text, want] : cases) {
    try {
      parse_node_labels(text);
      ADD_FAILURE() << text << ": accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << text << ": " << e.what();
    }
  }
}

TEST(ParseNodeGroup, count_then_items) {
  const NodeGroup g =
      parse_node_group("3,gpus=2,netns=cgfast,label=commgate.io/pool=fast,label=zone=b");
  EXPECT_EQ(g.count, 3);
  EXPECT_EQ(g.gpus, 2);
  EXPECT_EQ(g.netns_prefix, "cgfast");
  EXPECT_EQ(g.labels, (Labels{{"commgate.io/pool", "fast"}, {"zone", "b"}}));
  const NodeGroup plain = parse_node_group("1");
  EXPECT_EQ(plain.count, 1);
  EXPECT_EQ(plain.gpus, 0);
  EXPECT_TRUE(plain.netns_prefix.empty());
  EXPECT_TRUE(plain.labels.empty());
}

TEST(ParseNodeGroup, refuses_bad_items_and_names_them) {
  const std::pair<std::string, std::string> cases[] = {
      {"", "the node count must be a whole number 1..200"},
      {"0", "the node count must be a whole number 1..200"},
      {"-1", "the node count must be a whole number 1..200"},
      {"two", "the node count must be a whole number 1..200"},
      {"2,gpus=x", "gpus must be a whole number"},
      {"2,netns=Too_Long_Prefix", "netns must be 1-8 lowercase letters or digits"},
      {"2,label=nokey", "must be KEY=VALUE"},
      {"2,color=blue", "unknown item \"color\""},
      {"2,gpus", "must be gpus=G, netns=PREFIX or label=K=V"},
  };
  for (const auto& [text, want] : cases) {
    try {
      parse_node_group(text);
      ADD_FAILURE() << text << ": accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << text << ": " << e.what();
    }
  }
}

TEST(NodeSpecs, names_run_across_groups_and_addresses_restart_in_each_netns_group) {
  const auto nodes =
      node_specs({parse_node_group("2,netns=cgslow,label=pool=slow,gpus=1"),
                  parse_node_group("2,netns=cgfast,label=pool=fast"), parse_node_group("1")});
  ASSERT_EQ(nodes.size(), 5u);
  const std::string want_names[] = {"sim-node-0", "sim-node-1", "sim-node-2", "sim-node-3",
                                    "sim-node-4"};
  const std::string want_netns[] = {"cgslow-n0", "cgslow-n1", "cgfast-n0", "cgfast-n1", ""};
  const std::string want_address[] = {"198.18.0.1", "198.18.0.2", "198.18.0.1", "198.18.0.2", ""};
  const std::string want_pod_cidr[] = {"198.19.0.0/24", "198.19.1.0/24", "198.19.0.0/24",
                                       "198.19.1.0/24", ""};
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    EXPECT_EQ(nodes[i].name, want_names[i]);
    EXPECT_EQ(nodes[i].netns, want_netns[i]);
    EXPECT_EQ(nodes[i].address, want_address[i]);
    EXPECT_EQ(nodes[i].pod_cidr, want_pod_cidr[i]) << "scripts/netsim.sh's pod network";
  }
  EXPECT_EQ(nodes[0].gpus, 1);
  EXPECT_EQ(nodes[2].gpus, 0);
  EXPECT_EQ(nodes[1].labels, (Labels{{"pool", "slow"}}));
  EXPECT_EQ(nodes[3].labels, (Labels{{"pool", "fast"}}));
  EXPECT_TRUE(nodes[4].labels.empty());
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::sim
