// The TrainingJob's printer columns as the real kubectl shows them, for what the operator
// stores: the CommShare column is status.decision.predictedCommShare as written, rounded to
// 4 significant digits (it showed 0.013136288998357884; issue #10 follow-up). The status
// goes through the operator's own writer of status.decision (operator/decision_status.h
// put_decision) into commgate-sim, whose Table output kubectl prints (sim/table.cpp).
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "core/decision.h"
#include "operator/decision_status.h"
#include "sim/api_server.h"
#include "tests/sim/kubectl_on_sim.h"

namespace commgate::op {
namespace COMMGATE_TEST_UNIT {

using nlohmann::json;
using namespace std::chrono_literals;

// A downsize from 4 to 2 nodes whose prediction at 4 nodes has the share kubectl once
// showed in full.
Decision downsize_with_share(double share_at_requested) {
  Decision d;
  d.action = Action::kDownsize;
  d.reason = reason::kDownsized;
  d.message = "downsized";
  d.policy_name = "default";
  d.requested_nodes = 4;
  d.admitted_nodes = 2;
  d.largest_passing_nodes = 2;
  for (int n : {1, 2, 4}) {
    StepPrediction p;
    p.nodes = n;
    p.ranks = n;
    p.comm_share = n == 4 ? share_at_requested : 0.001 * n;
    d.predictions.push_back(p);
  }
  return d;
}

class PrinterColumns : public sim::KubectlOnSim {
 protected:
  // The chart's TrainingJob CRD and the examples' namespace.
  void apply_crd_and_namespace() {
    ASSERT_EQ(kubectl({"apply", "-f",
                       std::string(COMMGATE_SOURCE_DIR) +
                           "/charts/commgate/crds/trainingjobs.commgate.io.yaml"})
                  .code,
              0);
    std::ofstream(dir_ + "/ns.yaml")
        << "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: vision\n";
    ASSERT_EQ(kubectl({"apply", "-f", dir_ + "/ns.yaml"}).code, 0);
  }
};

TEST_F(PrinterColumns, commshare_shows_the_stored_share_at_four_significant_digits) {
  ASSERT_NO_FATAL_FAILURE(apply_crd_and_namespace());
  Result applied = kubectl(
      {"apply", "-f", std::string(COMMGATE_SOURCE_DIR) + "/examples/jobs/resnet50-5m.yaml"});
  ASSERT_EQ(applied.code, 0) << applied.output;

  const auto trainingjobs = *api_.store().find_resource("commgate.io", "v1alpha1", "trainingjobs");
  json tj = api_.store().get(trainingjobs, "vision", "resnet-small");
  TrainingJobStatus status;
  std::optional<Decision> to_count;
  put_decision(status, downsize_with_share(0.013136288998357884), nullptr, to_count);
  tj["status"] = status.to_json();
  api_.store().update(trainingjobs, "vision", "resnet-small", tj, sim::WritePart::kStatus);

  Result get = kubectl({"get", "trainingjobs", "-n", "vision"});
  ASSERT_EQ(get.code, 0) << get.output;
  EXPECT_NE(get.output.find("COMMSHARE"), std::string::npos) << get.output;
  EXPECT_NE(get.output.find(" 0.01314 "), std::string::npos) << get.output;
  EXPECT_EQ(get.output.find("0.013136"), std::string::npos) << get.output;

  // The stored number itself, not only the column: what -o json and a controller read.
  Result as_json = kubectl({"get", "trainingjob", "-n", "vision", "resnet-small", "-o", "json"});
  ASSERT_EQ(as_json.code, 0) << as_json.output;
  EXPECT_EQ(json::parse(as_json.output)["status"]["decision"]["predictedCommShare"], 0.01314)
      << as_json.output;
}

// #20: `kubectl get tj -o wide` of a Failed job showed only the decision's reason
// (WithinPolicy): the Failure column says why it failed.
TEST_F(PrinterColumns, a_failed_job_shows_why_it_failed_beside_the_decision_reason) {
  ASSERT_NO_FATAL_FAILURE(apply_crd_and_namespace());
  ASSERT_EQ(
      kubectl({"apply", "-f", std::string(COMMGATE_SOURCE_DIR) + "/examples/jobs/resnet50-5m.yaml"})
          .code,
      0);
  const auto trainingjobs = *api_.store().find_resource("commgate.io", "v1alpha1", "trainingjobs");
  json tj = api_.store().get(trainingjobs, "vision", "resnet-small");
  Result wide = kubectl({"get", "trainingjobs", "-n", "vision", "-o", "wide"});
  ASSERT_EQ(wide.code, 0) << wide.output;
  EXPECT_NE(wide.output.find("FAILURE"), std::string::npos) << wide.output;
  EXPECT_EQ(wide.output.find("WorkloadUnschedulable"), std::string::npos) << wide.output;
  tj["status"] = {
      {"phase", "Failed"},
      {"conditions",
       {{{"type", "Admitted"}, {"status", "True"}, {"reason", "WithinPolicy"}},
        {{"type", "Failed"}, {"status", "True"}, {"reason", "WorkloadUnschedulable"}}}}};
  api_.store().update(trainingjobs, "vision", "resnet-small", tj, sim::WritePart::kStatus);
  wide = kubectl({"get", "trainingjobs", "-n", "vision", "-o", "wide"});
  ASSERT_EQ(wide.code, 0) << wide.output;
  EXPECT_NE(wide.output.find(" WorkloadUnschedulable "), std::string::npos) << wide.output;
  // Not in the default columns: the narrow view stays as it was.
  Result narrow = kubectl({"get", "trainingjobs", "-n", "vision"});
  EXPECT_EQ(narrow.output.find("FAILURE"), std::string::npos) << narrow.output;
}

// `kubectl get cpol` shows what the policy does with a job larger than its pool (the
// trial of 2026-12-05 had to read -o yaml for it), with the default the API server fills.
TEST_F(PrinterColumns, commpolicies_show_what_happens_to_a_job_larger_than_its_pool) {
  ASSERT_EQ(kubectl({"apply", "-f",
                     std::string(COMMGATE_SOURCE_DIR) +
                         "/charts/commgate/crds/commpolicies.commgate.io.yaml"})
                .code,
            0);
  std::ofstream(dir_ + "/policies.yaml")
      << "apiVersion: commgate.io/v1alpha1\nkind: CommPolicy\nmetadata:\n  name: defaults\n"
         "spec:\n  maxCommShare: 0.3\n---\n"
         "apiVersion: commgate.io/v1alpha1\nkind: CommPolicy\nmetadata:\n  name: autoscaled\n"
         "spec:\n  maxCommShare: 0.25\n  onInsufficientNodes: ignore\n";
  Result applied = kubectl({"apply", "-f", dir_ + "/policies.yaml"});
  ASSERT_EQ(applied.code, 0) << applied.output;
  Result get = kubectl({"get", "cpol"});
  ASSERT_EQ(get.code, 0) << get.output;
  // The column's value in each row (kubectl aligns the columns under the header).
  std::map<std::string, std::string> column;
  std::istringstream lines(get.output);
  std::string header;
  std::getline(lines, header);
  const size_t at = header.find("ONINSUFFICIENTNODES");
  ASSERT_NE(at, std::string::npos) << get.output;
  for (std::string line; std::getline(lines, line);)
    if (line.size() > at)
      column[line.substr(0, line.find(' '))] = line.substr(at, line.find(' ', at) - at);
  EXPECT_EQ(column["defaults"], "gate") << get.output;
  EXPECT_EQ(column["autoscaled"], "ignore") << get.output;
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::op
