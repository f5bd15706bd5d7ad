// `kubectl get pods`' READY, STATUS and RESTARTS as upstream's printPod computes them
// (sim/pod_columns.h).
#include "sim/pod_columns.h"

#include <gtest/gtest.h>

namespace commgate::sim {
namespace COMMGATE_TEST_UNIT {

using nlohmann::json;

json pod_with(json statuses, const std::string& phase = "Running", int containers = 1) {
  json spec = json::array();
  for (int i = 0; i < containers; ++i) spec.push_back({{"name", "c" + std::to_string(i)}});
  return {{"metadata", {{"name", "p"}}},
          {"spec", {{"containers", spec}}},
          {"status", {{"phase", phase}, {"containerStatuses", std::move(statuses)}}}};
}

TEST(PodColumns, ReadyStatusAndRestartsAsKubectlPrintsThem) {
  const json running = {
      {"ready", true}, {"restartCount", 0}, {"state", {{"running", json::object()}}}};
  const json not_ready = {
      {"ready", false}, {"restartCount", 2}, {"state", {{"running", json::object()}}}};
  auto waiting = [](const std::string& reason) {
    return json{
        {"ready", false}, {"restartCount", 0}, {"state", {{"waiting", {{"reason", reason}}}}}};
  };
  auto terminated = [](json t) {
    return json{{"ready", false}, {"restartCount", 1}, {"state", {{"terminated", std::move(t)}}}};
  };
  struct Case {
    std::string name;
    json pod;
    std::string ready, status;
    long long restarts;
  };
  json deleting = pod_with(json::array({running}));
  deleting["metadata"]["deletionTimestamp"] = "2026-12-06T19:00:00Z";
  const Case cases[] = {
      {"running and ready", pod_with(json::array({running})), "1/1", "Running", 0},
      {"one of two ready, restarts summed",
       pod_with(json::array({running, not_ready}), "Running", 2), "1/2", "Running", 2},
      {"refused by the kubelet",
       pod_with(json::array({waiting("CreateContainerConfigError")}), "Pending"), "0/1",
       "CreateContainerConfigError", 0},
      {"an image not pulled", pod_with(json::array({waiting("ErrImagePull")}), "Pending"), "0/1",
       "ErrImagePull", 0},
      {"succeeded",
       pod_with(json::array({terminated({{"reason", "Completed"}, {"exitCode", 0}})}), "Succeeded"),
       "0/1", "Completed", 1},
      {"failed",
       pod_with(json::array({terminated({{"reason", "Error"}, {"exitCode", 1}})}), "Failed"), "0/1",
       "Error", 1},
      {"terminated without a reason",
       pod_with(json::array({terminated({{"exitCode", 3}})}), "Failed"), "0/1", "ExitCode:3", 1},
      {"killed by a signal",
       pod_with(json::array({terminated({{"exitCode", 137}, {"signal", 9}})}), "Failed"), "0/1",
       "Signal:9", 1},
      {"one done, one still running",
       pod_with(json::array({running, terminated({{"reason", "Completed"}})}), "Running", 2), "1/2",
       "NotReady", 1},
      {"no status yet", pod_with(json::array(), "Pending"), "0/1", "Pending", 0},
      {"being deleted", deleting, "1/1", "Terminating", 0},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(pod_column("podReady", c.pod), c.ready) << c.name;
    EXPECT_EQ(pod_column("podStatus", c.pod), c.status) << c.name;
    EXPECT_EQ(pod_column("podRestarts", c.pod), c.restarts) << c.name;
  }
  EXPECT_TRUE(pod_column("other", cases[0].pod).is_null());
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::sim
