// The kubelet's pure helpers (sim/kubelet.h): pod DNS names, $(VAR) expansion, fieldRefs.
#include "sim/kubelet.h"

#include <gtest/gtest.h>

namespace commgate::sim {
namespace COMMGATE_TEST_UNIT {

using nlohmann::json;

TEST(PodDnsName, accepts_the_short_and_long_forms_only) {
  struct Case {
    std::string text;
    bool ok;
    std::string ns;
  };
  const Case cases[] = {
      {"probe-0.ranks", true, "team"},
      {"probe-0.ranks.ml", true, "ml"},
      {"probe-0.ranks.ml.svc", true, "ml"},
      {"probe-0.ranks.ml.svc.cluster.local", true, "ml"},
      {"probe-0.ranks.ml.svc.cluster.local.", true, "ml"},
      {"probe-0", false, ""},
      {"probe-0.ranks.ml.pod", false, ""},
      {"probe-0.ranks.ml.svc.cluster", false, ""},
      {"10.0.0.1", false, ""},  // four labels, the fourth not "svc"
      {"Probe.ranks", false, ""},
  };
  for (const auto& c : cases) {
    const auto d = parse_pod_dns_name(c.text, "team");
    EXPECT_EQ(d.has_value(), c.ok) << c.text;
    if (d && c.ok) {
      EXPECT_EQ(d->hostname, "probe-0");
      EXPECT_EQ(d->subdomain, "ranks");
      EXPECT_EQ(d->ns, c.ns) << c.text;
    }
  }
}

TEST(ExpandEnvRefs, table) {
  const std::map<std::string, std::string> env = {{"A", "1"}, {"B", "two"}};
  const std::pair<std::string, std::string> cases[] = {
      {"$(A)", "1"}, {"x$(A)y$(B)", "x1ytwo"}, {"$(C)", "$(C)"},      {"$$(A)", "$(A)"},
      {"$$", "$"},   {"$(A", "$(A"},           {"no refs", "no refs"}};
  for (const auto& [in, want] : cases) EXPECT_EQ(expand_env_refs(in, env), want) << in;
}

TEST(FieldRefValue, table) {
  const json pod = {{"metadata",
                     {{"name", "p"},
                      {"namespace", "ns"},
                      {"uid", "u"},
                      {"labels", {{"app", "x"}}},
                      {"annotations", {{"batch.kubernetes.io/job-completion-index", "3"}}}}},
                    {"spec", {{"nodeName", "n1"}}},
                    {"status", {{"podIP", "198.18.0.2"}}}};
  const std::pair<std::string, std::optional<std::string>> cases[] = {
      {"metadata.name", "p"},
      {"metadata.namespace", "ns"},
      {"metadata.uid", "u"},
      {"spec.nodeName", "n1"},
      {"status.podIP", "198.18.0.2"},
      {"metadata.labels['app']", "x"},
      {"metadata.annotations['batch.kubernetes.io/job-completion-index']", "3"},
      {"metadata.annotations['missing']", ""},
      {"spec.containers", std::nullopt}};
  for (const auto& [path, want] : cases) EXPECT_EQ(field_ref_value(pod, path), want) << path;
}

}  // namespace
}  // namespace commgate::sim
