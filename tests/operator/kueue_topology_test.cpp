// operator/kueue_topology.h: Kueue v1beta2's compressed topology assignment decoded per
// domain. The encodings are the four examples of the TopologyAssignment documentation
// (apis/kueue/v1beta2/workload_types.go, Kueue v0.19.2), written as Kueue writes them.
#include "operator/kueue_topology.h"

#include <gtest/gtest.h>

#include "tests/operator/kueue_test_workloads.h"

namespace commgate::op::kueue {
namespace COMMGATE_TEST_UNIT {

using nlohmann::json;

constexpr const char* kPath = "status.admission.podSetAssignments[0].topologyAssignment";

json individual(json roots, std::optional<std::string> prefix = std::nullopt,
                std::optional<std::string> suffix = std::nullopt) {
  json ind = {{"roots", std::move(roots)}};
  if (prefix) ind["prefix"] = *prefix;
  if (suffix) ind["suffix"] = *suffix;
  return {{"individual", std::move(ind)}};
}

json universal(const std::string& value) {
  return {{"universal", value}};
}

json slice(int domains, json values_per_level, json pod_counts) {
  return {{"domainCount", domains},
          {"valuesPerLevel", std::move(values_per_level)},
          {"podCounts", std::move(pod_counts)}};
}

const std::vector<std::string> kBlockRack = {"cloud.provider.com/topology-block",
                                             "cloud.provider.com/topology-rack"};
const std::vector<std::string> kHostname = {"kubernetes.io/hostname"};

// Example 3's six hosts.
const std::vector<std::string> kSixHosts = {"block-1-rack-1-node-1", "block-1-rack-1-node-2",
                                            "block-1-rack-1-node-3", "block-1-rack-1-node-4",
                                            "block-1-rack-2-node-1", "block-1-rack-2-node-2"};

struct DecodeCase {
  std::string name;
  json assignment;
  std::vector<TopologyDomain> want_domains;
  std::vector<std::string> want_hostnames;
};

void PrintTo(const DecodeCase& c, std::ostream* os) {
  *os << c.name;
}

std::vector<TopologyDomain> six_hosts_one_pod_each() {
  std::vector<TopologyDomain> out;
  for (const auto& h : kSixHosts) out.push_back({{h}, 1});
  return out;
}

std::vector<DecodeCase> decode_cases() {
  const std::vector<TopologyDomain> block_rack = {{{"block-1", "rack-1"}, 4},
                                                  {{"block-1", "rack-2"}, 2}};
  return {
      {.name = "example_1_individual_values_and_counts",
       .assignment = {{"levels", kBlockRack},
                      {"slices", json::array({slice(2,
                                                    json::array({individual({"block-1", "block-1"}),
                                                                 individual({"rack-1", "rack-2"})}),
                                                    {{"individual", {4, 2}}})})}},
       .want_domains = block_rack,
       .want_hostnames = {}},
      {.name = "example_2_universal_value_and_a_prefix",
       .assignment = {{"levels", kBlockRack},
                      {"slices",
                       json::array({slice(
                           2, json::array({universal("block-1"), individual({"1", "2"}, "rack-")}),
                           {{"individual", {4, 2}}})})}},
       .want_domains = block_rack,
       .want_hostnames = {}},
      {.name = "example_3_hostnames_with_a_common_prefix_and_universal_count",
       .assignment = {{"levels", kHostname},
                      {"slices", json::array({slice(
                                     6,
                                     json::array({individual({"1-node-1", "1-node-2", "1-node-3",
                                                              "1-node-4", "2-node-1", "2-node-2"},
                                                             "block-1-rack-")}),
                                     {{"universal", 1}})})}},
       .want_domains = six_hosts_one_pod_each(),
       .want_hostnames = kSixHosts},
      {.name = "example_4_two_slices_decode_as_example_3",
       .assignment =
           {{"levels", kHostname},
            {"slices",
             json::array(
                 {slice(4, json::array({individual({"1", "2", "3", "4"}, "block-1-rack-1-node-")}),
                        {{"universal", 1}}),
                  slice(2, json::array({individual({"1", "2"}, "block-1-rack-2-node-")}),
                        {{"universal", 1}})})}},
       .want_domains = six_hosts_one_pod_each(),
       .want_hostnames = kSixHosts},
      {.name = "prefix_and_suffix_around_each_root",
       .assignment = {{"levels", kHostname},
                      {"slices",
                       json::array({slice(
                           2, json::array({individual({"7", "8"}, "gpu-", ".zone-a.internal")}),
                           {{"individual", {8, 3}}})})}},
       .want_domains = {{{"gpu-7.zone-a.internal"}, 8}, {{"gpu-8.zone-a.internal"}, 3}},
       .want_hostnames = {"gpu-7.zone-a.internal", "gpu-8.zone-a.internal"}},
      {.name = "hostname_below_higher_levels_is_still_the_node",
       .assignment = {{"levels", {"cloud.provider.com/topology-rack", "kubernetes.io/hostname"}},
                      {"slices",
                       json::array({slice(
                           2, json::array({universal("rack-1"), individual({"a", "b"}, "node-")}),
                           {{"universal", 2}})})}},
       .want_domains = {{{"rack-1", "node-a"}, 2}, {{"rack-1", "node-b"}, 2}},
       .want_hostnames = {"node-a", "node-b"}},
  };
}

class TopologyDecodeTest : public ::testing::TestWithParam<DecodeCase> {};

TEST_P(TopologyDecodeTest, decodes_every_domain) {
  const DecodeCase& c = GetParam();
  const TopologyAssignment ta = decode_topology_assignment(c.assignment, kPath);
  EXPECT_EQ(ta.domains, c.want_domains);
  EXPECT_EQ(ta.hostnames(), c.want_hostnames);
  EXPECT_EQ(ta.lowest_level_is_hostname(), !c.want_hostnames.empty());
  int64_t pods = 0;
  for (const auto& d : c.want_domains) pods += d.pod_count;
  EXPECT_EQ(ta.pod_count(), pods);
}

INSTANTIATE_TEST_SUITE_P(KueueTopology, TopologyDecodeTest, ::testing::ValuesIn(decode_cases()),
                         [](const ::testing::TestParamInfo<DecodeCase>& p) {
                           return p.param.name;
                         });

TEST(KueueTopology, the_test_builders_hostname_assignment_decodes_to_its_hosts) {
  const TopologyAssignment ta =
      decode_topology_assignment(testing::hostname_assignment("gpu-", {"1", "2", "3"}, 4), kPath);
  EXPECT_EQ(ta.hostnames(), (std::vector<std::string>{"gpu-1", "gpu-2", "gpu-3"}));
  EXPECT_EQ(ta.pod_count(), 12);
}

struct BadCase {
  std::string name;
  json assignment;
  std::string want_path;  // below kPath
  std::string want_message;
};

void PrintTo(const BadCase& c, std::ostream* os) {
  *os << c.name;
}

std::vector<BadCase> bad_cases() {
  const json one_host = json::array({individual({"a", "b"})});
  return {
      {"values_per_level_not_one_per_level",
       {{"levels", kBlockRack}, {"slices", json::array({slice(2, one_host, {{"universal", 1}})})}},
       ".slices[0].valuesPerLevel",
       "has 1 entries, but the assignment has 2 levels"},
      {"roots_not_one_per_domain",
       {{"levels", kHostname}, {"slices", json::array({slice(3, one_host, {{"universal", 1}})})}},
       ".slices[0].valuesPerLevel[0].individual.roots",
       "has 2 values, but domainCount is 3"},
      {"individual_pod_counts_not_one_per_domain",
       {{"levels", kHostname},
        {"slices", json::array({slice(2, one_host, {{"individual", {1}}})})}},
       ".slices[0].podCounts.individual",
       "has 1 pod counts, but domainCount is 2"},
      {"both_universal_and_individual_values",
       {{"levels", kHostname},
        {"slices",
         json::array(
             {slice(2, json::array({{{"universal", "x"}, {"individual", {{"roots", {"a", "b"}}}}}}),
                    {{"universal", 1}})})}},
       ".slices[0].valuesPerLevel[0]",
       "exactly one of universal, individual must be set, got both"},
      {"neither_universal_nor_individual_pod_counts",
       {{"levels", kHostname}, {"slices", json::array({slice(2, one_host, json::object())})}},
       ".slices[0].podCounts",
       "exactly one of universal, individual must be set, got neither"},
      {"domain_count_zero",
       {{"levels", kHostname}, {"slices", json::array({slice(0, one_host, {{"universal", 1}})})}},
       ".slices[0].domainCount",
       "must be >= 1, got 0"},
      {"an_individual_pod_count_of_zero",
       {{"levels", kHostname},
        {"slices", json::array({slice(2, one_host, {{"individual", {1, 0}}})})}},
       ".slices[0].podCounts.individual[1]",
       "must be a pod count >= 1, got number 0"},
      {"universal_pod_count_of_zero",
       {{"levels", kHostname}, {"slices", json::array({slice(2, one_host, {{"universal", 0}})})}},
       ".slices[0].podCounts.universal",
       "must be >= 1, got 0"},
      {"no_levels",
       {{"levels", json::array()},
        {"slices", json::array({slice(2, one_host, {{"universal", 1}})})}},
       ".levels",
       "must name at least one level"},
      {"slices_missing", {{"levels", kHostname}}, ".slices", "required field is missing"},
      {"pod_counts_missing",
       {{"levels", kHostname},
        {"slices", json::array({{{"domainCount", 2}, {"valuesPerLevel", one_host}}})}},
       ".slices[0].podCounts",
       "required field is missing"},
      {"roots_not_strings",
       {{"levels", kHostname},
        {"slices",
         json::array({slice(2, json::array({individual({"a", 2})}), {{"universal", 1}})})}},
       ".slices[0].valuesPerLevel[0].individual.roots[1]",
       "must be a string, got number 2"},
      {"a_universal_slice_claiming_two_billion_domains",
       {{"levels", kHostname},
        {"slices",
         json::array({slice(2000000000, json::array({universal("node-a")}), {{"universal", 1}})})}},
       ".slices[0].domainCount",
       "more than the 100000 commgate reads"},
      {"domains_past_the_limit_across_slices",
       {{"levels", kHostname},
        {"slices", json::array({slice(60000, json::array({universal("a")}), {{"universal", 1}}),
                                slice(60000, json::array({universal("b")}), {{"universal", 1}})})}},
       ".slices[1].domainCount",
       "brings the assignment to 120000 domains"},
  };
}

class TopologyBadInputTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(TopologyBadInputTest, names_the_field) {
  const BadCase& c = GetParam();
  try {
    decode_topology_assignment(c.assignment, kPath);
    FAIL() << "accepted";
  } catch (const ValidationError& e) {
    const std::string want_path = std::string(kPath) + c.want_path;
    bool found = false;
    for (const FieldError& fe : e.errors().all())
      found =
          found || (fe.path == want_path && fe.message.find(c.want_message) != std::string::npos);
    EXPECT_TRUE(found) << "want " << want_path << ": ..." << c.want_message << "...\ngot "
                       << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(KueueTopology, TopologyBadInputTest, ::testing::ValuesIn(bad_cases()),
                         [](const ::testing::TestParamInfo<BadCase>& p) { return p.param.name; });

TEST(KueueTopology, reports_the_errors_of_every_slice) {
  const json bad = {
      {"levels", kHostname},
      {"slices",
       json::array({slice(2, json::array({individual({"a"})}), {{"universal", 1}}),
                    slice(1, json::array({individual({"b"})}), {{"individual", {1, 1}}})})}};
  try {
    decode_topology_assignment(bad, kPath);
    FAIL() << "accepted";
  } catch (const ValidationError& e) {
    ASSERT_EQ(e.errors().size(), 2u) << e.what();
    EXPECT_EQ(e.errors().all()[0].path,
              std::string(kPath) + ".slices[0].valuesPerLevel[0].individual.roots");
    EXPECT_EQ(e.errors().all()[1].path, std::string(kPath) + ".slices[1].podCounts.individual");
  }
}

TEST(KueueTopology, an_absent_assignment_is_reported_at_its_path) {
  try {
    decode_topology_assignment(nullptr, kPath);
    FAIL() << "accepted";
  } catch (const ValidationError& e) {
    ASSERT_EQ(e.errors().size(), 1u);
    EXPECT_EQ(e.errors().all()[0].path, kPath);
  }
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::op::kueue
