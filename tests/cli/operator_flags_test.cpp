// `commgate operator`'s flags: defaults (with POD_NAMESPACE and POD_NAME from the
// environment), every flag in both spellings, and errors that name the flag and the
// value. The process itself runs in tests/operator/operator_cli_e2e_test.cpp.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "cli/flag_reader.h"
#include "cli/operator_command.h"

namespace commgate {
namespace COMMGATE_TEST_UNIT {

const std::vector<std::string> kTls = {"--tls-cert-file", "c.pem", "--tls-private-key-file",
                                       "k.pem"};

std::function<std::string(const char*)> env_of(std::map<std::string, std::string> vars) {
  return [vars](const char* name) {
    auto it = vars.find(name);
    return it == vars.end() ? std::string() : it->second;
  };
}

OperatorFlags parse(std::vector<std::string> args, std::map<std::string, std::string> env = {}) {
  args.insert(args.end(), kTls.begin(), kTls.end());
  return parse_operator_flags(args, env_of(std::move(env)));
}

TEST(OperatorFlags, DefaultsAreTheDocumentedOnes) {
  const OperatorFlags f = parse({});
  const op::OperatorOptions& o = f.options;
  EXPECT_FALSE(f.help);
  EXPECT_EQ(f.log_format, "text");
  EXPECT_EQ(f.kubeconfig, "");
  EXPECT_EQ(o.ns, "commgate-system");
  EXPECT_EQ(o.reconciler.probe.ns, "commgate-system");
  EXPECT_EQ(o.concurrency, 4);
  EXPECT_EQ(o.kube_api_qps, 20);
  EXPECT_EQ(o.kube_api_burst, 30);
  EXPECT_TRUE(o.leader_elect);
  EXPECT_EQ(o.lease_name, "commgate-operator");
  EXPECT_EQ(o.lease_duration, std::chrono::seconds(15));
  EXPECT_EQ(o.renew_deadline, std::chrono::seconds(10));
  EXPECT_EQ(o.retry_period, std::chrono::seconds(2));
  EXPECT_EQ(o.server.address, "0.0.0.0");
  EXPECT_EQ(o.server.port, 8443);
  ASSERT_TRUE(o.server.tls.has_value());
  EXPECT_EQ(o.server.tls->cert_file, "c.pem");
  EXPECT_EQ(o.server.tls->key_file, "k.pem");
  EXPECT_EQ(o.reconciler.probe.image, "commgate/commgate-probe:0.1.0");
  EXPECT_EQ(o.reconciler.probe.command, std::vector<std::string>{"/usr/local/bin/commgate-probe"});
  EXPECT_EQ(o.reconciler.probe.port, 29501);
  EXPECT_EQ(o.reconciler.probe.ttl_seconds_after_finished, 600);
  EXPECT_EQ(o.reconciler.workload.master_port, 29500);
  EXPECT_EQ(o.pod_name, "");
}

TEST(OperatorFlags, TheEnvironmentGivesTheNamespaceAndPodNameAndTheFlagWins) {
  const auto env = std::map<std::string, std::string>{{"POD_NAMESPACE", "ops"},
                                                      {"POD_NAME", "commgate-operator-7f9c-x"}};
  EXPECT_EQ(parse({}, env).options.ns, "ops");
  EXPECT_EQ(parse({}, env).options.reconciler.probe.ns, "ops");
  EXPECT_EQ(parse({}, env).options.pod_name, "commgate-operator-7f9c-x");
  EXPECT_EQ(parse({"--namespace", "mine"}, env).options.ns, "mine");
  EXPECT_EQ(parse({"--namespace=mine"}, env).options.reconciler.probe.ns, "mine");
}

TEST(OperatorFlags, EveryFlagInBothSpellings) {
  for (const bool with_equals : {false, true}) {
    SCOPED_TRACE(with_equals ? "--flag=value" : "--flag value");
    std::vector<std::string> args;
    auto add = [&](const std::string& flag, const std::string& value) {
      if (with_equals) {
        args.push_back(flag + "=" + value);
      } else {
        args.push_back(flag);
        args.push_back(value);
      }
    };
    add("--kubeconfig", "/k");
    add("--namespace", "ns1");
    add("--concurrency", "8");
    add("--kube-api-qps", "50.5");
    add("--kube-api-burst", "80");
    add("--leader-elect-lease-duration", "2m");
    add("--leader-elect-renew-deadline", "20");
    add("--leader-elect-retry-period", "5s");
    add("--port", "0");
    add("--address", "127.0.0.1");
    add("--probe-image", "probe:dev");
    add("--probe-command", "/bin/probe,--verbose");
    add("--probe-command", "--x");
    add("--probe-port", "30000");
    add("--probe-ttl-seconds", "0");
    add("--workload-port", "29600");
    add("--log-format", "json");
    const OperatorFlags f = parse(args);
    const op::OperatorOptions& o = f.options;
    EXPECT_EQ(f.kubeconfig, "/k");
    EXPECT_EQ(f.log_format, "json");
    EXPECT_EQ(o.ns, "ns1");
    EXPECT_EQ(o.reconciler.probe.ns, "ns1");
    EXPECT_EQ(o.concurrency, 8);
    EXPECT_EQ(o.kube_api_qps, 50.5);
    EXPECT_EQ(o.kube_api_burst, 80);
    EXPECT_EQ(o.lease_duration, std::chrono::seconds(120));
    EXPECT_EQ(o.renew_deadline, std::chrono::seconds(20));
    EXPECT_EQ(o.retry_period, std::chrono::seconds(5));
    EXPECT_EQ(o.server.port, 0);
    EXPECT_EQ(o.server.address, "127.0.0.1");
    EXPECT_EQ(o.reconciler.probe.image, "probe:dev");
    EXPECT_EQ(o.reconciler.probe.command,
              (std::vector<std::string>{"/bin/probe", "--verbose", "--x"}));
    EXPECT_EQ(o.reconciler.probe.port, 30000);
    EXPECT_EQ(o.reconciler.probe.ttl_seconds_after_finished, 0);
    EXPECT_EQ(o.reconciler.workload.master_port, 29600);
  }
}

TEST(OperatorFlags, LeaderElectIsABooleanFlag) {
  EXPECT_TRUE(parse({"--leader-elect"}).options.leader_elect);
  EXPECT_TRUE(parse({"--leader-elect=true"}).options.leader_elect);
  EXPECT_FALSE(parse({"--leader-elect=false"}).options.leader_elect);
  // Without leader election the timings are not checked against each other.
  EXPECT_NO_THROW(parse({"--leader-elect=false", "--leader-elect-retry-period", "20s"}));
}

TEST(OperatorFlags, HelpNeedsNoOtherFlag) {
  EXPECT_TRUE(parse_operator_flags({"--help"}, env_of({})).help);
  EXPECT_TRUE(parse_operator_flags({"-h"}, env_of({})).help);
}

struct BadCase {
  std::string name;
  std::vector<std::string> args;
  std::string want_message;
  bool with_tls = true;
};

TEST(OperatorFlags, ErrorsNameTheFlagAndTheValue) {
  const std::vector<BadCase> cases = {
      {"unknown_flag", {"--nope"}, "unknown argument \"--nope\""},
      {"missing_value_at_the_end", {"--namespace"}, "--namespace needs a value", false},
      {"empty_namespace", {"--namespace="}, "--namespace must not be empty"},
      {"port_not_a_number",
       {"--port", "https"},
       "--port must be an integer from 0 to 65535, got \"https\""},
      {"port_too_large", {"--port=70000"}, "--port must be an integer from 0 to 65535"},
      {"zero_concurrency", {"--concurrency", "0"}, "--concurrency must be an integer from 1"},
      {"negative_qps",
       {"--kube-api-qps", "-1"},
       "--kube-api-qps must be a number >= 0, got \"-1\""},
      {"qps_with_junk", {"--kube-api-qps", "20qps"}, "--kube-api-qps must be a number"},
      {"zero_burst", {"--kube-api-burst", "0"}, "--kube-api-burst must be an integer from 1"},
      {"leader_elect_maybe",
       {"--leader-elect=maybe"},
       "--leader-elect must be true or false, got \"maybe\""},
      {"fractional_lease",
       {"--leader-elect-lease-duration", "1.5s"},
       "--leader-elect-lease-duration must be whole seconds"},
      {"renew_not_below_lease",
       {"--leader-elect-lease-duration", "10s", "--leader-elect-renew-deadline", "10s"},
       "--leader-elect-renew-deadline (10s) must be shorter than --leader-elect-lease-duration "
       "(10s)"},
      {"retry_not_below_renew",
       {"--leader-elect-retry-period", "10s"},
       "--leader-elect-retry-period (10s) must be shorter than --leader-elect-renew-deadline "
       "(10s)"},
      {"empty_probe_command_element",
       {"--probe-command", "/bin/probe,,x"},
       "--probe-command has an empty element"},
      {"probe_port_zero", {"--probe-port", "0"}, "--probe-port must be an integer from 1 to 65535"},
      {"negative_ttl", {"--probe-ttl-seconds", "-5"}, "--probe-ttl-seconds must be an integer"},
      {"log_format_xml", {"--log-format", "xml"}, "--log-format must be text or json, got \"xml\""},
      {"no_tls", {}, "--tls-cert-file and --tls-private-key-file are required", false},
  };
  for (const BadCase& c : cases) {
    SCOPED_TRACE(c.name);
    std::vector<std::string> args = c.args;
    if (c.with_tls) args.insert(args.end(), kTls.begin(), kTls.end());
    try {
      parse_operator_flags(args, env_of({}));
      ADD_FAILURE() << "accepted";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(c.want_message), std::string::npos) << e.what();
    }
  }
}

// A contract between two sources of truth: every flag the chart's operator Deployment
// passes is one `commgate operator` knows (a renamed flag would crash-loop the pod).
TEST(OperatorFlags, EveryFlagTheChartPassesIsKnown) {
  const std::string path =
      std::string(COMMGATE_SOURCE_DIR) + "/charts/commgate/templates/operator-deployment.yaml";
  std::ifstream in(path);
  ASSERT_TRUE(in) << path;
  std::stringstream text;
  text << in.rdbuf();
  const std::string yaml = text.str();
  ASSERT_NE(yaml.find("- operator\n"), std::string::npos) << path;
  const std::regex flag(R"(\n\s*- (--[a-z0-9-]+)(=|\n))");
  int seen = 0;
  for (auto it = std::sregex_iterator(yaml.begin(), yaml.end(), flag); it != std::sregex_iterator();
       ++it) {
    const std::string name = (*it)[1];
    ++seen;
    SCOPED_TRACE(name);
    try {
      parse({name + "=1"});
    } catch (const UsageError& e) {
      // A value of the wrong kind is fine here; an unknown flag is not.
      EXPECT_EQ(std::string(e.what()).find("unknown argument"), std::string::npos) << e.what();
    }
  }
  EXPECT_GE(seen, 8) << "the chart's operator args were not found in " << path;
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate
