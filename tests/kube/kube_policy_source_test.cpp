// The webhook's Kubernetes policy source against the simulated API server with the
// project's CRDs applied: the Snapshot follows the cluster, stays null until every watch
// has listed, and leaves out (and logs, with field paths) objects that do not parse.
#include "webhook/kube_policy_source.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <sstream>

#include "core/yaml_json.h"
#include "sim/api_server.h"
#include "tests/kube/kube_test_support.h"
#include "tests/webhook/webhook_test_support.h"

namespace commgate::webhook {
namespace COMMGATE_TEST_UNIT {

using kube::testing::client_for;
using kube::testing::wait_until;
using nlohmann::json;

json policy(const std::string& name, double max_share) {
  return {{"apiVersion", "commgate.io/v1alpha1"},
          {"kind", "CommPolicy"},
          {"metadata", {{"name", name}}},
          {"spec", {{"maxCommShare", max_share}}}};
}

class KubePolicySourceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    api_.start();
    client_ = client_for(api_);
  }
  void TearDown() override {
    if (source_) source_->stop();
  }

  void apply_crds() {
    const auto crd_resource =
        *api_.store().find_resource("apiextensions.k8s.io", "v1", "customresourcedefinitions");
    for (const char* file : {"commpolicies.commgate.io.yaml", "commprofiles.commgate.io.yaml"}) {
      std::ifstream in(std::string(COMMGATE_SOURCE_DIR) + "/crds/" + file);
      std::stringstream text;
      text << in.rdbuf();
      for (const auto& doc : yaml_documents_to_json(text.str()))
        api_.store().create(crd_resource, "", doc);
    }
  }
  sim::ResourceInfo resource(const std::string& plural) {
    return *api_.store().find_resource("commgate.io", "v1alpha1", plural);
  }
  void start_source() {
    KubePolicySource::Options o;
    o.log = Logger([this](const LogRecord& r) {
      std::lock_guard lock(log_mu_);
      logs_.emplace_back(r.message);
    });
    o.backoff_initial = std::chrono::milliseconds(20);
    o.backoff_max = std::chrono::milliseconds(200);
    source_ = std::make_unique<KubePolicySource>(*client_, o);
    source_->start();
  }
  std::vector<std::string> logs() {
    std::lock_guard lock(log_mu_);
    return logs_;
  }

  sim::ApiServer api_;
  std::unique_ptr<kube::ApiClient> client_;
  std::unique_ptr<KubePolicySource> source_;
  std::mutex log_mu_;
  std::vector<std::string> logs_;
};

TEST_F(KubePolicySourceTest, BuildsASnapshotFromTheClusterAndFollowsChanges) {
  apply_crds();
  api_.store().create(resource("commpolicies"), "", policy("strict", 0.1));
  api_.store().create(resource("commprofiles"), "",
                      testing::a_profile(1.0, commgate::testing::test_now()));
  const auto namespaces = *api_.store().find_resource("", "v1", "namespaces");
  api_.store().create(namespaces, "",
                      {{"apiVersion", "v1"},
                       {"kind", "Namespace"},
                       {"metadata", {{"name", "research"}, {"labels", {{"team", "nlp"}}}}}});
  start_source();
  ASSERT_TRUE(wait_until([&] { return source_->snapshot() != nullptr; }));
  auto snap = source_->snapshot();
  ASSERT_EQ(snap->policies.size(), 1u);
  EXPECT_EQ(snap->policies[0].spec.max_comm_share, 0.1);
  EXPECT_NE(snap->profile("pool-all"), nullptr);
  EXPECT_EQ(snap->labels_of("research").at("team"), "nlp");

  json strict = api_.store().get(resource("commpolicies"), "", "strict");
  strict["spec"]["maxCommShare"] = 0.2;
  api_.store().update(resource("commpolicies"), "", "strict", strict, sim::WritePart::kMain);
  ASSERT_TRUE(wait_until([&] {
    auto s = source_->snapshot();
    return s->policies.size() == 1 && s->policies[0].spec.max_comm_share == 0.2;
  }));
  api_.store().remove(resource("commpolicies"), "", "strict");
  ASSERT_TRUE(wait_until([&] { return source_->snapshot()->policies.empty(); }));
  EXPECT_EQ(source_->rejected_objects(), 0u);

  // /metrics gets each watcher's counters and state.
  const std::string metrics = source_->metrics_text();
  EXPECT_NE(metrics.find("commgate_webhook_watch_lists_total{collection=\"/apis/commgate.io/"
                         "v1alpha1/commpolicies\"} 1\n"),
            std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("commgate_webhook_watch_state{collection=\"/api/v1/namespaces\","
                         "state=\"watching\"} 1"),
            std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("commgate_webhook_rejected_objects 0"), std::string::npos);
}

TEST_F(KubePolicySourceTest, StaysNullUntilEveryWatchHasListed) {
  start_source();  // no CRDs yet: the CommPolicy and CommProfile lists answer 404
  ASSERT_TRUE(wait_until([&] {
    const auto w = source_->informers();
    return w[0]->counters().errors >= 2 && w[2]->counters().lists == 1;
  }));
  EXPECT_EQ(source_->snapshot(), nullptr) << "namespaces listed, policies not";
  apply_crds();
  ASSERT_TRUE(wait_until([&] { return source_->snapshot() != nullptr; }));
  EXPECT_TRUE(source_->snapshot()->policies.empty());
}

TEST_F(KubePolicySourceTest, LeavesOutAMalformedPolicyAndLogsItsFieldPathOnce) {
  apply_crds();
  api_.store().create(resource("commpolicies"), "", policy("good", 0.1));
  json bad = policy("bad", 2.0);
  bad["spec"]["enforcementAction"] = "block";
  api_.store().create(resource("commpolicies"), "", bad);
  start_source();
  ASSERT_TRUE(wait_until([&] { return source_->snapshot() != nullptr; }));
  ASSERT_EQ(source_->snapshot()->policies.size(), 1u);
  EXPECT_EQ(source_->snapshot()->policies[0].metadata.name, "good");
  EXPECT_EQ(source_->rejected_objects(), 1u);

  // Another change rebuilds the snapshot; the bad object is not logged again.
  api_.store().create(resource("commpolicies"), "", policy("second", 0.3));
  ASSERT_TRUE(wait_until([&] { return source_->snapshot()->policies.size() == 2; }));
  const auto lines = logs();
  int about_bad = 0;
  for (const auto& l : lines) {
    if (l.find("CommPolicy bad") == std::string::npos) continue;
    ++about_bad;
    EXPECT_NE(l.find("spec.maxCommShare"), std::string::npos) << l;
    EXPECT_NE(l.find("spec.enforcementAction"), std::string::npos) << l;
  }
  EXPECT_EQ(about_bad, 1);

  api_.store().remove(resource("commpolicies"), "", "bad");
  ASSERT_TRUE(wait_until([&] { return source_->rejected_objects() == 0; }));
}

// Issue #19 item 6, through the watch: a strict policy edited into one that does not parse
// (stored while the policy webhook, which fails open, was down) keeps governing as its
// last valid version, logged once and counted.
TEST_F(KubePolicySourceTest, APolicyEditedIntoAnInvalidOneGovernsAsItsLastValidVersion) {
  apply_crds();
  api_.store().create(resource("commpolicies"), "", policy("strict", 0.1));
  start_source();
  ASSERT_TRUE(wait_until([&] { return source_->snapshot() != nullptr; }));
  ASSERT_EQ(source_->snapshot()->policies.size(), 1u);

  json broken = api_.store().get(resource("commpolicies"), "", "strict");
  broken["spec"]["maxCommShare"] = "high";
  api_.store().update(resource("commpolicies"), "", "strict", broken, sim::WritePart::kMain);
  ASSERT_TRUE(wait_until([&] { return source_->rejected_objects() == 1; }));
  ASSERT_EQ(source_->snapshot()->policies.size(), 1u);
  EXPECT_DOUBLE_EQ(source_->snapshot()->policies[0].spec.max_comm_share, 0.1);
  EXPECT_EQ(source_->snapshot()->stale_policies.count("strict"), 1u);
  EXPECT_NE(source_->metrics_text().find("commgate_webhook_policies_kept_last_valid 1"),
            std::string::npos)
      << source_->metrics_text();
  int said = 0;
  for (const auto& l : logs())
    said += l.find("CommPolicy strict") != std::string::npos &&
            l.find("its last valid version") != std::string::npos &&
            l.find("spec.maxCommShare") != std::string::npos;
  EXPECT_EQ(said, 1);

  // Fixed: the stored version governs again, nothing kept.
  json fixed = api_.store().get(resource("commpolicies"), "", "strict");
  fixed["spec"]["maxCommShare"] = 0.2;
  api_.store().update(resource("commpolicies"), "", "strict", fixed, sim::WritePart::kMain);
  ASSERT_TRUE(wait_until([&] { return source_->rejected_objects() == 0; }));
  EXPECT_DOUBLE_EQ(source_->snapshot()->policies[0].spec.max_comm_share, 0.2);
  EXPECT_NE(source_->metrics_text().find("commgate_webhook_policies_kept_last_valid 0"),
            std::string::npos);
}

// Issue 12, defect 5: a CommProfile "measured" in 2099 counted as fresh forever. The CRD
// cannot say so (a schema has no clock), so the apiserver stores it; the webhook's reader
// refuses it, leaves it out of the snapshot (its pool has no measurement), counts it and
// logs it once with the field path.
TEST_F(KubePolicySourceTest, LeavesOutAProfileMeasuredInTheFutureAndCountsIt) {
  apply_crds();
  // Status is a subresource: create drops it, as the apiserver does; write it after.
  auto create_with_status = [&](const json& profile) {
    const std::string name = profile["metadata"]["name"];
    json stored = api_.store().create(resource("commprofiles"), "", profile);
    stored["status"] = profile["status"];
    api_.store().update(resource("commprofiles"), "", name, stored, sim::WritePart::kStatus);
  };
  json future = testing::a_profile(1.0, commgate::testing::test_now(), "pool-future");
  future["status"]["link"]["measuredAt"] = "2099-01-01T00:00:00Z";
  create_with_status(future);
  create_with_status(testing::a_profile(1.0, commgate::testing::test_now(), "pool-good"));
  start_source();
  ASSERT_TRUE(wait_until([&] { return source_->snapshot() != nullptr; }));
  ASSERT_NE(source_->snapshot()->profile("pool-good"), nullptr);
  ASSERT_TRUE(source_->snapshot()->profile("pool-good")->status.link);
  EXPECT_EQ(source_->snapshot()->profile("pool-future"), nullptr);
  EXPECT_EQ(source_->rejected_objects(), 1u);
  EXPECT_NE(source_->metrics_text().find("commgate_webhook_rejected_objects 1"), std::string::npos)
      << source_->metrics_text();

  // A rebuild for another change does not log it again.
  api_.store().create(resource("commpolicies"), "", policy("strict", 0.1));
  ASSERT_TRUE(wait_until([&] { return source_->snapshot()->policies.size() == 1; }));
  int about_future = 0;
  for (const auto& l : logs()) {
    if (l.find("CommProfile pool-future") == std::string::npos) continue;
    ++about_future;
    EXPECT_NE(l.find("status.link.measuredAt: must not be in the future"), std::string::npos) << l;
  }
  EXPECT_EQ(about_future, 1);
}

// `commgate webhook --kueue`: the snapshot carries Kueue's LocalQueues and whether each
// runs commgate's check, follows their changes, and is served without Kueue's API too.
TEST_F(KubePolicySourceTest, WatchesKueuesQueuesWhenAskedAndServesWithoutThem) {
  apply_crds();
  KubePolicySource::Options o;
  o.backoff_initial = std::chrono::milliseconds(20);
  o.backoff_max = std::chrono::milliseconds(200);
  o.watch_kueue_queues = true;
  source_ = std::make_unique<KubePolicySource>(*client_, o);
  source_->start();
  // No Kueue API: the policies are served, the queues unknown.
  ASSERT_TRUE(wait_until([&] { return source_->snapshot() != nullptr; }));
  EXPECT_EQ(source_->snapshot()->kueue_queues, nullptr);

  const auto crds =
      *api_.store().find_resource("apiextensions.k8s.io", "v1", "customresourcedefinitions");
  for (const char* file :
       {"kueue.x-k8s.io_admissionchecks.yaml", "kueue.x-k8s.io_clusterqueues.yaml",
        "kueue.x-k8s.io_localqueues.yaml"}) {
    std::ifstream in(std::string(COMMGATE_SOURCE_DIR) +
                     "/../shared/fixtures/ecosystem/kueue-v0.19.2/" + file);
    std::stringstream text;
    text << in.rdbuf();
    for (const auto& doc : yaml_documents_to_json(text.str())) api_.store().create(crds, "", doc);
  }
  auto kueue = [&](const std::string& plural) {
    return *api_.store().find_resource("kueue.x-k8s.io", "v1beta2", plural);
  };
  api_.store().create(kueue("admissionchecks"), "",
                      {{"apiVersion", "kueue.x-k8s.io/v1beta2"},
                       {"kind", "AdmissionCheck"},
                       {"metadata", {{"name", "comm"}}},
                       {"spec", {{"controllerName", "commgate.io/comm-check"}}}});
  api_.store().create(
      kueue("clusterqueues"), "",
      {{"apiVersion", "kueue.x-k8s.io/v1beta2"},
       {"kind", "ClusterQueue"},
       {"metadata", {{"name", "gpu"}}},
       {"spec", {{"admissionChecksStrategy", {{"admissionChecks", {{{"name", "comm"}}}}}}}}});
  api_.store().create(*api_.store().find_resource("", "v1", "namespaces"), "",
                      {{"metadata", {{"name", "nlp"}}}});
  api_.store().create(kueue("localqueues"), "nlp",
                      {{"apiVersion", "kueue.x-k8s.io/v1beta2"},
                       {"kind", "LocalQueue"},
                       {"metadata", {{"name", "gpu"}, {"namespace", "nlp"}}},
                       {"spec", {{"clusterQueue", "gpu"}}}});
  auto checked = [&] {
    const auto snapshot = source_->snapshot();
    if (!snapshot || !snapshot->kueue_queues) return std::optional<bool>();
    const KueueQueue* q = snapshot->kueue_queues->find("nlp", "gpu");
    return q ? std::optional<bool>(q->checked) : std::optional<bool>();
  };
  EXPECT_TRUE(wait_until([&] { return checked() == true; }, std::chrono::seconds(10)));
  // The check gone: the queue no longer lets jobs through.
  api_.store().remove(kueue("admissionchecks"), "", "comm");
  EXPECT_TRUE(wait_until([&] { return checked() == false; }, std::chrono::seconds(10)));
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::webhook
