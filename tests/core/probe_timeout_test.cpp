// The probe's timeout when the policy sets none: sized by the model it times (#20: a 350M
// probe took 599 s of 600).
#include "core/probe_timeout.h"

#include <gtest/gtest.h>

#include <limits>

#include "core/comm_policy.h"

namespace commgate {
namespace COMMGATE_TEST_UNIT {

ModelSpec model(double parameters, int batch) {
  ModelSpec m;
  m.parameters = parameters;
  m.batch_size = batch;
  return m;
}

TEST(ProbeTimeout, table) {
  struct Case {
    const char* what;
    int policy;
    ModelSpec model;
    bool times_model;
    int want;
  };
  const Case cases[] = {
      {"the policy's value stands", 120, model(7e9, 32), true, 120},
      {"a small model gets the base", 0, model(25e6, 32), true, 300},
      {"100M at batch 32 is the base", 0, model(100e6, 32), true, 300},
      {"350M: 3.5x, up to a whole minute", 0, model(350e6, 32), true, 1080},
      {"a larger batch scales the compute", 0, model(100e6, 128), true, 1200},
      {"a batch of 1 does not shrink it", 0, model(200e6, 1), true, 600},
      {"1.3B is capped at an hour", 0, model(1.3e9, 32), true, 3600},
      {"a link-only probe times no model", 0, model(7e9, 32), false, 300},
      {"a nonsense size is capped, not overflowed", 0,
       model(std::numeric_limits<double>::infinity(), 32), true, 3600},
  };
  for (const auto& c : cases)
    EXPECT_EQ(probe_timeout_seconds(c.policy, c.model, c.times_model), c.want) << c.what;
}

// Absent from a policy is 0 (sized), and stays absent when the policy is written back.
TEST(ProbeTimeout, an_absent_timeout_round_trips_as_absent) {
  const nlohmann::json doc = {{"apiVersion", "commgate.io/v1alpha1"},
                              {"kind", "CommPolicy"},
                              {"metadata", {{"name", "p"}}},
                              {"spec", {{"maxCommShare", 0.3}}}};
  const CommPolicy p = parse_comm_policy(doc);
  EXPECT_EQ(p.spec.probe.timeout_seconds, 0);
  EXPECT_FALSE(to_json(p)["spec"]["probe"].contains("timeoutSeconds"));
  nlohmann::json set = doc;
  set["spec"]["probe"]["timeoutSeconds"] = 900;
  EXPECT_EQ(to_json(parse_comm_policy(set))["spec"]["probe"]["timeoutSeconds"], 900);
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate
