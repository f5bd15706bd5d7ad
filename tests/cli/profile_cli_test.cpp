// `commgate profile --from-probe` as an admin runs it: the real binary, the recorded probe
// results of examples/measurements/, and the parity issue 12 asks for — the printed
// CommProfile, parsed back or served by the real `commgate webhook --profile-dir`, decides
// every example job as `commgate evaluate --measurement PROBE.json` does.
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>

#include "core/annotations.h"
#include "core/base64.h"
#include "core/comm_profile.h"
#include "core/probe_result.h"
#include "core/yaml_json.h"
#include "tests/cli/cli_test_support.h"
#include "tests/server/test_client.h"
#include "tests/server/test_pki.h"
#include "tests/support/builders.h"
#include "tests/support/child_process.h"
#include "tests/support/wait.h"
#include "tests/webhook/webhook_test_support.h"

namespace commgate {
namespace COMMGATE_TEST_UNIT {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::CliRun;
using testing::example;
using testing::run;
using testing::TempFile;

const std::string kPool = "commgate.io/pool=cpu-1gbe";

// The example jobs and the recorded probe each is decided with in examples/README.md.
struct ExampleCase {
  std::string job;
  std::string probe;
  std::string want_action;
};
const std::vector<ExampleCase> kExamples = {
    {"jobs/resnet50-5m.yaml", "measurements/probe-netns-2-nodes-1gbit-5M-params-batch-4096.json",
     "Admit"},
    {"jobs/bert-large-350m.yaml", "measurements/probe-netns-2-nodes-1gbit-350M-params.json",
     "Downsize"},
    {"jobs/llm-7b.yaml", "measurements/probe-netns-2-nodes-1gbit-350M-params.json", "Deny"},
};

json only_document(const std::string& text) {
  const auto docs = parse_manifests(text);
  EXPECT_EQ(docs.size(), 1u) << text;
  return docs.empty() ? json() : docs[0];
}

// `commgate evaluate -o json` of one job: its decision object.
json evaluate_decision(const std::string& job, const std::string& measurement) {
  CliRun r = run({"evaluate", "-f", job, "--measurement", measurement, "-o", "json"});
  EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.err;
  return r.exit_code <= 1 ? json::parse(r.out)["decision"] : json();
}

// The same decision: action, reason, counts and message exactly; the predictions to
// rounding (the profile stores microseconds and GB/s where the probe result has them too,
// but a double may come back one ulp away).
void expect_same_decision(const json& from_probe, const json& from_profile,
                          const std::string& what) {
  for (const char* key :
       {"action", "reason", "message", "requestedNodes", "admittedNodes", "largestPassingNodes"}) {
    EXPECT_EQ(from_profile.value(key, json()), from_probe.value(key, json()))
        << what << ": " << key;
  }
  const json& a = from_probe["predictions"];
  const json& b = from_profile["predictions"];
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i]["nodes"], b[i]["nodes"]) << what;
    EXPECT_NEAR(a[i]["commShare"].get<double>(), b[i]["commShare"].get<double>(), 1e-9)
        << what << " at " << a[i]["nodes"];
    EXPECT_NEAR(a[i]["stepTimeMs"].get<double>(), b[i]["stepTimeMs"].get<double>(),
                1e-9 * a[i]["stepTimeMs"].get<double>())
        << what << " at " << a[i]["nodes"];
  }
}

TEST(ProfileCli, names_the_profile_after_the_pool_of_the_node_selector) {
  struct Case {
    std::string name;
    std::vector<std::string> selector_args;
    std::map<std::string, std::string> want_selector;
  };
  const std::vector<Case> cases = {
      {"the_examples_pool", {"--node-selector", kPool}, {{"commgate.io/pool", "cpu-1gbe"}}},
      {"pairs_in_any_order",
       {"--node-selector", "zone=b,commgate.io/pool=cpu-1gbe"},
       {{"commgate.io/pool", "cpu-1gbe"}, {"zone", "b"}}},
      {"a_repeated_flag_adds_pairs",
       {"--node-selector", "commgate.io/pool=cpu-1gbe", "--node-selector=zone=b"},
       {{"commgate.io/pool", "cpu-1gbe"}, {"zone", "b"}}},
      {"no_selector_is_pool_all", {}, {}},
  };
  for (const auto& c : cases) {
    std::vector<std::string> args = {"profile", "--from-probe", example(kExamples[1].probe)};
    args.insert(args.end(), c.selector_args.begin(), c.selector_args.end());
    CliRun r = run(args);
    ASSERT_EQ(r.exit_code, 0) << c.name << "\n" << r.err;
    const json doc = only_document(r.out);
    EXPECT_EQ(doc["kind"], "CommProfile") << c.name;
    EXPECT_EQ(doc["metadata"]["name"], pool_name(c.want_selector)) << c.name << "\n" << r.out;
    EXPECT_EQ(doc["spec"].value("nodeSelector", json::object()), json(c.want_selector)) << c.name;
    // stderr names the profile and how to apply its status.
    EXPECT_NE(r.err.find("CommProfile " + pool_name(c.want_selector)), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("--subresource=status"), std::string::npos) << r.err;
  }
  EXPECT_EQ(pool_name({{"commgate.io/pool", "cpu-1gbe"}}), "pool-1fe15c4a8473beea")
      << "examples/README.md and docs/webhook.md quote this name";
}

TEST(ProfileCli, yaml_and_json_print_the_same_valid_profile) {
  CliRun yaml =
      run({"profile", "--from-probe", example(kExamples[1].probe), "--node-selector", kPool});
  CliRun as_json = run({"profile", "--from-probe", example(kExamples[1].probe), "--node-selector",
                        kPool, "-o", "json"});
  ASSERT_EQ(yaml.exit_code, 0) << yaml.err;
  ASSERT_EQ(as_json.exit_code, 0) << as_json.err;
  EXPECT_EQ(only_document(yaml.out), json::parse(as_json.out));
  const CommProfile p = parse_comm_profile(json::parse(as_json.out), Clock::now());
  ASSERT_TRUE(p.status.link);
  EXPECT_EQ(p.status.link->nodes_probed, 2);
  EXPECT_EQ(p.status.compute_steps.size(), 1u);
}

TEST(ProfileCli, bad_input_exits_2_naming_the_field) {
  ProbeResult zero_nodes =
      parse_probe_result(json::parse(testing::slurp(example(kExamples[1].probe))));
  json zero = to_json(zero_nodes);
  zero["world"]["nodes"] = 0;
  json no_bandwidth = to_json(zero_nodes);
  no_bandwidth["allReduce"]["fit"]["busbwGBps"] = 0;
  json failed = to_json(zero_nodes);
  failed["error"] = {{"stage", "rendezvous"}, {"message", "timed out waiting for rank 1"}};
  TempFile zero_file(zero.dump()), no_bandwidth_file(no_bandwidth.dump()),
      failed_file(failed.dump());
  TempFile job(testing::a_training_job("bert").nodes(4).json().dump(), ".yaml");
  const std::string probe = example(kExamples[1].probe);
  struct Case {
    std::string name;
    std::vector<std::string> args;
    std::string want;
  };
  const std::vector<Case> cases = {
      {"no_probe", {}, "--from-probe PROBE.json is required"},
      {"missing_file", {"--from-probe", "/nonexistent.json"}, "cannot read /nonexistent.json"},
      {"a_directory", {"--from-probe", fs::temp_directory_path().string()}, "is a directory"},
      {"a_job_instead", {"--from-probe", job.path()}, "holds a TrainingJob; --from-probe takes"},
      {"zero_nodes", {"--from-probe", zero_file.path()}, "world.nodes: must be >= "},
      {"zero_bandwidth",
       {"--from-probe", no_bandwidth_file.path()},
       "allReduce.fit.busbwGBps: must be > 0"},
      {"a_failed_probe",
       {"--from-probe", failed_file.path()},
       "the probe failed (stage rendezvous: timed out waiting for rank 1)"},
      {"selector_without_value",
       {"--from-probe", probe, "--node-selector", "pool"},
       "--node-selector: \"pool\" is not key=value"},
      {"selector_bad_key",
       {"--from-probe", probe, "--node-selector", "bad key!=x"},
       "has a key that is not a label name"},
      {"selector_bad_prefix",
       {"--from-probe", probe, "--node-selector", "Example.COM/pool=x"},
       "key prefix that is not a DNS subdomain"},
      {"selector_bad_value",
       {"--from-probe", probe, "--node-selector", "pool=-x"},
       "has a value that is not a label value"},
      {"selector_key_twice",
       {"--from-probe", probe, "--node-selector", "a=1,a=2"},
       "repeats key \"a\""},
      {"unknown_output", {"--from-probe", probe, "-o", "xml"}, "--output must be yaml or json"},
      {"unknown_flag", {"--from-probe", probe, "--bogus"}, "unknown argument \"--bogus\""},
  };
  for (const auto& c : cases) {
    std::vector<std::string> args = {"profile"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    CliRun r = run(args);
    EXPECT_EQ(r.exit_code, 2) << c.name << "\n" << r.err;
    EXPECT_NE(r.err.find(c.want), std::string::npos) << c.name << "\n" << r.err;
    EXPECT_TRUE(r.out.empty()) << c.name << "\n" << r.out;
  }
}

// The parity of issue 12 ("One measurement, one decision") seen from outside: the printed
// profile, given back to evaluate, decides each example job as the probe result does.
TEST(ProfileCli, the_printed_profile_decides_every_example_as_the_probe_result_does) {
  for (const auto& c : kExamples) {
    CliRun profile = run({"profile", "--from-probe", example(c.probe), "--node-selector", kPool});
    ASSERT_EQ(profile.exit_code, 0) << profile.err;
    TempFile profile_file(profile.out, ".yaml");
    const json from_probe = evaluate_decision(example(c.job), example(c.probe));
    const json from_profile = evaluate_decision(example(c.job), profile_file.path());
    EXPECT_EQ(from_probe.value("action", ""), c.want_action) << c.job;
    expect_same_decision(from_probe, from_profile, c.job);
  }
}

// The cluster decides a job from its own pool's profile; evaluate with another pool's profile
// would print a decision the cluster never makes (found in a user trial: a job for
// cpu-1gbee was "Downsize" on the cpu-1gbe profile while the cluster gated it).
TEST(ProfileCli, evaluate_refuses_a_profile_of_another_pool_and_names_the_right_one) {
  CliRun profile = run({"profile", "--from-probe", example(kExamples[1].probe), "--node-selector",
                        "commgate.io/pool=cpu-1gbee"});
  ASSERT_EQ(profile.exit_code, 0) << profile.err;
  TempFile profile_file(profile.out, ".yaml");
  CliRun matching = run({"profile", "--from-probe", example(kExamples[1].probe), "--node-selector",
                         kPool, "-o", "json"});
  ASSERT_EQ(matching.exit_code, 0) << matching.err;
  const std::string right_profile = json::parse(matching.out)["metadata"]["name"];
  CliRun r =
      run({"evaluate", "-f", example(kExamples[1].job), "--measurement", profile_file.path()});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  for (const std::string& want :
       {profile_file.path() + " measures the pool {commgate.io/pool=cpu-1gbee}",
        std::string("TrainingJob nlp/bert-large selects {commgate.io/pool=cpu-1gbe}"),
        "that pool's CommProfile, " + right_profile + " (kubectl get commprofile " + right_profile +
            " -o yaml"}) {
    EXPECT_NE(r.err.find(want), std::string::npos) << want << "\n" << r.err;
  }
}

// A probe result as taken now: the webhook judges a profile's age by its own clock.
std::string restamped_now(const std::string& probe_file) {
  json probe = json::parse(testing::slurp(probe_file));
  probe["startTime"] = format_rfc3339(Clock::now());
  return probe.dump();
}

class ProfileThroughWebhook : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = pki_.dir() / "webhook";
    fs::create_directories(dir_ / "profiles");
    pki_.issue_server_cert(1);
  }
  // Starts `commgate webhook --profile-dir` (no policy dir: the built-in default policy)
  // and waits until it is ready.
  void start_webhook() {
    webhook_ = std::make_unique<testing::ChildProcess>(
        std::vector<std::string>{COMMGATE_BIN, "webhook", "--port", "0", "--address", "127.0.0.1",
                                 "--tls-cert-file", pki_.cert_file(), "--tls-private-key-file",
                                 pki_.key_file(), "--profile-dir", (dir_ / "profiles").string()},
        dir_ / "webhook.log");
    port_ = webhook_->wait_for_port(std::regex("listening on 127\\.0\\.0\\.1:([0-9]+)"));
    ASSERT_NE(port_, 0) << webhook_->output();
    ASSERT_TRUE(testing::wait_until([&] { return post_status("/readyz") == 200; }))
        << webhook_->output();
  }
  int post_status(const std::string& path) {
    server::testing::Client c(port_, pki_.ca_file());
    if (!c.connect().empty()) return 0;
    try {
      return c.request("GET", path).status;
    } catch (const std::exception&) {
      return 0;
    }
  }
  json review(const std::string& path, const json& job) {
    server::testing::Client c(port_, pki_.ca_file());
    EXPECT_EQ(c.connect(), "");
    auto reply = c.request("POST", path, webhook::testing::a_create_of(job).body(),
                           {{"Content-Type", "application/json"}});
    EXPECT_EQ(reply.status, 200) << reply.body;
    return json::parse(reply.body)["response"];
  }
  // What the webhook does with a CREATE of `job`: the decision annotation /mutate writes
  // and the node count it leaves, or "Deny" and the message /validate refuses it with.
  struct WebhookAnswer {
    std::string action;
    int nodes = 0;
    std::string message;
  };
  WebhookAnswer decide(json job) {
    WebhookAnswer a;
    const json mutated = review("/mutate", job);
    if (mutated.contains("patch"))
      job = job.patch(json::parse(base64_decode(mutated["patch"].get<std::string>())));
    a.nodes = job["spec"]["numNodes"];
    a.action =
        job["metadata"].value("annotations", json::object()).value(annotation::kDecision, "");
    const json validated = review("/validate", job);
    if (!validated.value("allowed", false)) {
      a.action = "Deny";
      a.message = validated["status"].value("message", "");
    }
    return a;
  }

  server::testing::TestPki pki_;
  fs::path dir_;
  std::unique_ptr<testing::ChildProcess> webhook_;
  uint16_t port_ = 0;
};

// The printed profile, applied through the webhook's file source, decides every example
// job at admission as `commgate evaluate --measurement PROBE.json` does.
TEST_F(ProfileThroughWebhook, the_webhook_decides_every_example_as_the_probe_result_does) {
  // One pool, one profile: the examples that share the 350M recording go first, then the
  // ResNet job's recording replaces it (a second profile of the same pool would be the
  // same name).
  for (const std::string& probe_rel : {kExamples[1].probe, kExamples[0].probe}) {
    TempFile fresh(restamped_now(example(probe_rel)));
    CliRun profile = run({"profile", "--from-probe", fresh.path(), "--node-selector", kPool});
    ASSERT_EQ(profile.exit_code, 0) << profile.err;
    server::testing::write_file_atomically((dir_ / "profiles" / "pool.yaml").string(), profile.out);
    // A fresh webhook per profile: no waiting for the file source's next poll.
    webhook_.reset();
    start_webhook();
    if (HasFatalFailure()) return;
    for (const auto& c : kExamples) {
      if (c.probe != probe_rel) continue;
      const json from_probe = evaluate_decision(example(c.job), fresh.path());
      const WebhookAnswer got = decide(parse_manifests(testing::slurp(example(c.job)))[0]);
      EXPECT_EQ(got.action, from_probe.value("action", "")) << c.job << "\n" << webhook_->output();
      EXPECT_EQ(got.action, c.want_action) << c.job;
      if (got.action == "Deny") {
        EXPECT_NE(got.message.find(from_probe.value("message", "")), std::string::npos)
            << c.job << "\nwebhook: " << got.message << "\nevaluate: " << from_probe["message"];
      } else {
        EXPECT_EQ(got.nodes, from_probe.value("admittedNodes", -1)) << c.job;
      }
    }
  }
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate
