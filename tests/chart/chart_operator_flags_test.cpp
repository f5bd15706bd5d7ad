// A contract test between the chart and `commgate operator` (STYLE.md, "A contract test
// between two sources of truth"): the rendered operator container's arguments and
// environment go through the operator's real flag parser (cli/operator_command.h), and
// what it makes of them is what the chart meant: the release namespace, the Lease the
// chart's Role grants, the port the probes and the Service use, the mounted certificate,
// the values' tuning.
#include <gtest/gtest.h>

#include <map>
#include <ostream>

#include "cli/operator_command.h"
#include "tests/chart/chart_render.h"

namespace commgate::testing {
namespace COMMGATE_TEST_UNIT {

using nlohmann::json;

struct Rendered {
  json deployment, lease_role;
};

Rendered operator_objects(const RenderedChart& r) {
  Rendered out;
  for (const auto& o : r.objects) {
    const auto& labels = o["metadata"].value("labels", json::object());
    if (labels.value("app.kubernetes.io/component", "") != "operator") continue;
    if (o["kind"] == "Deployment") out.deployment = o;
    if (o["kind"] == "Role") out.lease_role = o;
  }
  return out;
}

// The container's environment as the kubelet sets it: the downward API's fieldRefs.
std::map<std::string, std::string> pod_env(const json& container, const std::string& pod_name,
                                           const std::string& ns) {
  std::map<std::string, std::string> env;
  for (const auto& e : container.value("env", json::array())) {
    const std::string field = e.value("valueFrom", json::object())
                                  .value("fieldRef", json::object())
                                  .value("fieldPath", "");
    if (field == "metadata.name") env[e["name"]] = pod_name;
    if (field == "metadata.namespace") env[e["name"]] = ns;
    if (e.contains("value")) env[e["name"]] = e["value"];
  }
  return env;
}

struct FlagsCase {
  std::string name;
  std::vector<std::string> render_args;
  std::string ns;
  bool want_leader_elect;
  double want_qps;
  int want_burst, want_concurrency, want_port;
  std::string want_probe_image, want_log_format;
  int want_max_probes = 8, want_max_probes_per_namespace = 2;
  bool want_kueue = false;  // the Kueue admission check (kueue.enabled, docs/kueue.md)
};

void PrintTo(const FlagsCase& c, std::ostream* os) {
  *os << c.name;
}

class ChartOperatorFlags : public ::testing::TestWithParam<FlagsCase> {};

TEST_P(ChartOperatorFlags, the_operator_reads_the_charts_arguments_as_meant) {
  const auto& c = GetParam();
  const auto r = render_chart(c.render_args);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const Rendered objects = operator_objects(r);
  ASSERT_TRUE(objects.deployment.is_object());
  const json& pod = objects.deployment["spec"]["template"]["spec"];
  const json& container = pod["containers"][0];
  auto args = container["args"].get<std::vector<std::string>>();
  ASSERT_EQ(args.at(0), "operator");
  args.erase(args.begin());
  const auto env = pod_env(container, "commgate-operator-7d9f-abcde", c.ns);

  OperatorFlags f;
  ASSERT_NO_THROW(f = parse_operator_flags(args,
                                           [&](const char* name) {
                                             const auto it = env.find(name);
                                             return it == env.end() ? std::string() : it->second;
                                           }))
      << ::testing::PrintToString(args);
  const op::OperatorOptions& o = f.options;
  EXPECT_EQ(o.ns, c.ns);
  EXPECT_EQ(o.pod_name, "commgate-operator-7d9f-abcde");
  EXPECT_EQ(o.leader_elect, c.want_leader_elect);
  EXPECT_EQ(o.kube_api_qps, c.want_qps);
  EXPECT_EQ(o.kube_api_burst, c.want_burst);
  EXPECT_EQ(o.concurrency, c.want_concurrency);
  EXPECT_EQ(o.reconciler.probe.image, c.want_probe_image);
  EXPECT_EQ(o.reconciler.probe.max_concurrent, c.want_max_probes);
  EXPECT_EQ(o.reconciler.probe.max_per_namespace, c.want_max_probes_per_namespace);
  EXPECT_EQ(o.reconciler.probe.command, std::vector<std::string>{"/usr/local/bin/commgate-probe"});
  EXPECT_EQ(f.log_format, c.want_log_format);
  EXPECT_EQ(o.kueue, c.want_kueue);
  EXPECT_TRUE(f.kubeconfig.empty()) << "in the pod: the service account's in-cluster config";

  // The port the kubelet's probes and the metrics Service reach.
  EXPECT_EQ(o.server.port, c.want_port);
  EXPECT_EQ(container["ports"][0]["containerPort"], c.want_port);
  EXPECT_EQ(container["livenessProbe"]["httpGet"]["scheme"], "HTTPS");
  // The certificate files are in the mounted Secret.
  ASSERT_TRUE(o.server.tls.has_value());
  const std::string mount = container["volumeMounts"][0]["mountPath"];
  EXPECT_EQ(o.server.tls->cert_file, mount + "/tls.crt");
  EXPECT_EQ(o.server.tls->key_file, mount + "/tls.key");

  // The Lease it elects on is the one the chart's Role lets it get and update, in the
  // namespace of that Role.
  if (c.want_leader_elect) {
    ASSERT_TRUE(objects.lease_role.is_object());
    EXPECT_EQ(objects.lease_role["metadata"]["namespace"], o.ns);
    EXPECT_EQ(objects.lease_role["rules"][0]["resourceNames"], json::array({o.lease_name}));
  } else {
    EXPECT_FALSE(objects.lease_role.is_object()) << "no Lease, no Role for it";
  }
}

INSTANTIATE_TEST_SUITE_P(
    Values, ChartOperatorFlags,
    ::testing::Values(
        FlagsCase{"defaults",
                  {},
                  "commgate-system",
                  true,
                  20,
                  30,
                  4,
                  8443,
                  "commgate/commgate-probe:0.1.0",
                  "json"},
        FlagsCase{"another_release_and_namespace",
                  {"--name", "gate", "--namespace", "ml-infra"},
                  "ml-infra",
                  true,
                  20,
                  30,
                  4,
                  8443,
                  "commgate/commgate-probe:0.1.0",
                  "json"},
        FlagsCase{"tuned_single_replica_without_leader_election",
                  {"--set",
                   "operator.replicas=1,operator.leaderElection.enabled=false,operator.port=9444,"
                   "operator.kubeApiQPS=50,operator.kubeApiBurst=100,operator.concurrency=16,"
                   "operator.logFormat=text,probe.image=registry.example/probe:cuda12,"
                   "operator.maxConcurrentProbes=3,operator.maxProbesPerNamespace=0"},
                  "commgate-system",
                  false,
                  50,
                  100,
                  16,
                  9444,
                  "registry.example/probe:cuda12",
                  "text",
                  3,
                  0},
        FlagsCase{"the_kueue_admission_check",
                  {"--set", "kueue.enabled=true"},
                  "commgate-system",
                  true,
                  20,
                  30,
                  4,
                  8443,
                  "commgate/commgate-probe:0.1.0",
                  "json",
                  8,
                  2,
                  true}),
    [](const auto& test) { return test.param.name; });

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::testing
