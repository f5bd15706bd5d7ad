// Which webhooks a request goes to (sim/admission_rules.h), as tables: kube-apiserver's
// resource/subresource, scope and selector rules, without HTTP.
#include "sim/admission_rules.h"

#include <gtest/gtest.h>

namespace commgate::sim {
namespace COMMGATE_TEST_UNIT {

using nlohmann::json;

AdmissionAttributes a_request(const std::string& operation, const std::string& group,
                              const std::string& plural, const std::string& sub,
                              const std::string& ns) {
  AdmissionAttributes a;
  a.operation = operation;
  a.resource.group = group;
  a.resource.version = group.empty() ? "v1" : "v1alpha1";
  a.resource.plural = plural;
  a.subresource = sub;
  a.ns = ns;
  return a;
}

json rule(std::vector<std::string> resources, std::vector<std::string> operations = {"*"},
          const std::string& scope = "") {
  json r = {{"operations", operations},
            {"apiGroups", {"*"}},
            {"apiVersions", {"*"}},
            {"resources", resources}};
  if (!scope.empty()) r["scope"] = scope;
  return json::array({r});
}

TEST(AdmissionRules, resources_and_subresources_match_as_upstream) {
  const auto main = a_request("UPDATE", "commgate.io", "trainingjobs", "", "nlp");
  const auto scale = a_request("UPDATE", "commgate.io", "trainingjobs", "scale", "nlp");
  const auto status = a_request("UPDATE", "commgate.io", "trainingjobs", "status", "nlp");
  struct Case {
    std::vector<std::string> resources;
    bool main, scale, status;
  };
  for (const Case& c : std::vector<Case>{
           {{"trainingjobs"}, true, false, false},
           {{"trainingjobs/scale"}, false, true, false},
           {{"trainingjobs/*"}, true, true, true},
           {{"*"}, true, false, false},
           {{"*/*"}, true, true, true},
           {{"*/scale"}, false, true, false},
           {{"pods", "trainingjobs/status"}, false, false, true},
           {{"commpolicies"}, false, false, false},
       }) {
    const std::string name = json(c.resources).dump();
    EXPECT_EQ(rules_match(rule(c.resources), main), c.main) << name;
    EXPECT_EQ(rules_match(rule(c.resources), scale), c.scale) << name;
    EXPECT_EQ(rules_match(rule(c.resources), status), c.status) << name;
  }
}

TEST(AdmissionRules, operations_groups_versions_and_scope) {
  const auto create = a_request("CREATE", "commgate.io", "trainingjobs", "", "nlp");
  EXPECT_TRUE(rules_match(rule({"trainingjobs"}, {"CREATE", "UPDATE"}), create));
  EXPECT_FALSE(rules_match(rule({"trainingjobs"}, {"DELETE"}), create));
  json other_group = rule({"trainingjobs"});
  other_group[0]["apiGroups"] = {"batch"};
  EXPECT_FALSE(rules_match(other_group, create));
  json other_version = rule({"trainingjobs"});
  other_version[0]["apiVersions"] = {"v1"};
  EXPECT_FALSE(rules_match(other_version, create));
  EXPECT_FALSE(rules_match(json::array(), create));

  const auto policy = a_request("CREATE", "commgate.io", "commpolicies", "", "");
  const auto ns = a_request("CREATE", "", "namespaces", "", "nlp");  // its own name
  EXPECT_TRUE(rules_match(rule({"*"}, {"*"}, "Namespaced"), create));
  EXPECT_FALSE(rules_match(rule({"*"}, {"*"}, "Cluster"), create));
  EXPECT_TRUE(rules_match(rule({"*"}, {"*"}, "Cluster"), policy));
  EXPECT_FALSE(rules_match(rule({"*"}, {"*"}, "Namespaced"), policy));
  // A Namespace is cluster-scoped although its requests carry a namespace.
  EXPECT_TRUE(rules_match(rule({"*"}, {"*"}, "Cluster"), ns));
  EXPECT_FALSE(rules_match(rule({"*"}, {"*"}, "Namespaced"), ns));
  EXPECT_TRUE(rules_match(rule({"*"}, {"*"}, "*"), ns));
}

TEST(AdmissionRules, label_selectors_and_object_selectors) {
  const json labels = {{"team", "nlp"}, {"tier", "gold"}};
  EXPECT_TRUE(label_selector_matches(json::object(), labels));
  EXPECT_TRUE(label_selector_matches({{"matchLabels", {{"team", "nlp"}}}}, labels));
  EXPECT_FALSE(label_selector_matches({{"matchLabels", {{"team", "vision"}}}}, labels));
  auto expr = [](const std::string& op, std::vector<std::string> values = {}) {
    json e = {{"key", "tier"}, {"operator", op}};
    if (!values.empty()) e["values"] = values;
    return json{{"matchExpressions", json::array({e})}};
  };
  EXPECT_TRUE(label_selector_matches(expr("In", {"gold", "silver"}), labels));
  EXPECT_FALSE(label_selector_matches(expr("In", {"silver"}), labels));
  EXPECT_TRUE(label_selector_matches(expr("NotIn", {"silver"}), labels));
  EXPECT_TRUE(label_selector_matches(expr("NotIn", {"silver"}), json::object()));
  EXPECT_TRUE(label_selector_matches(expr("Exists"), labels));
  EXPECT_FALSE(label_selector_matches(expr("DoesNotExist"), labels));
  EXPECT_THROW(label_selector_matches(expr("Near"), labels), std::invalid_argument);

  auto a = a_request("DELETE", "commgate.io", "trainingjobs", "", "nlp");
  a.object = nullptr;
  a.old_object = {{"metadata", {{"labels", labels}}}};
  EXPECT_TRUE(object_selector_matches({{"matchLabels", {{"team", "nlp"}}}}, a));
  EXPECT_FALSE(object_selector_matches({{"matchLabels", {{"team", "vision"}}}}, a));
  EXPECT_TRUE(object_selector_matches(json::object(), a));
  a.old_object = {{"metadata", json::object()}};
  EXPECT_FALSE(object_selector_matches({{"matchLabels", {{"team", "nlp"}}}}, a));
}

TEST(AdmissionRules, webhook_configurations_never_go_to_webhooks) {
  EXPECT_TRUE(exempt_from_webhooks(a_request("CREATE", "admissionregistration.k8s.io",
                                             "validatingwebhookconfigurations", "", "")));
  EXPECT_TRUE(exempt_from_webhooks(a_request("DELETE", "admissionregistration.k8s.io",
                                             "mutatingwebhookconfigurations", "", "")));
  EXPECT_FALSE(exempt_from_webhooks(a_request("CREATE", "commgate.io", "trainingjobs", "", "nlp")));
}

}  // namespace
}  // namespace commgate::sim
