// operator/state_metrics.h: the gauges computed from the caches at scrape time.
#include "operator/state_metrics.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "tests/support/builders.h"

namespace commgate::op {
namespace COMMGATE_TEST_UNIT {

using nlohmann::json;
using namespace std::chrono_literals;

std::shared_ptr<const json> a_stored_job(const std::string& phase, TimePoint created) {
  json j = {{"metadata", {{"name", "j"}, {"creationTimestamp", format_rfc3339(created)}}}};
  if (!phase.empty()) j["status"] = {{"phase", phase}};
  return std::make_shared<const json>(std::move(j));
}

TEST(StateMetrics, jobs_by_phase_and_the_oldest_wait) {
  const TimePoint now = testing::test_now();
  const std::vector<std::shared_ptr<const json>> jobs = {
      a_stored_job("", now - 5s),          a_stored_job("Gated", now - 90s),
      a_stored_job("Probing", now - 300s), a_stored_job("Running", now - 3600s),
      a_stored_job("Running", now - 60s),  nullptr};
  const std::string text = state_metrics_text(jobs, now, "x");
  for (const char* want :
       {"# TYPE x_trainingjobs gauge\n", "x_trainingjobs{phase=\"Pending\"} 1\n",
        "x_trainingjobs{phase=\"Gated\"} 1\n", "x_trainingjobs{phase=\"Probing\"} 1\n",
        "x_trainingjobs{phase=\"Running\"} 2\n", "x_trainingjobs{phase=\"Rejected\"} 0\n",
        "x_gated_job_oldest_wait_seconds 300\n"})
    EXPECT_NE(text.find(want), std::string::npos) << want << "\n" << text;

  const std::string idle = state_metrics_text({}, now, "x");
  EXPECT_NE(idle.find("x_gated_job_oldest_wait_seconds 0\n"), std::string::npos) << idle;
  EXPECT_NE(idle.find("x_trainingjobs{phase=\"Succeeded\"} 0\n"), std::string::npos) << idle;
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::op
