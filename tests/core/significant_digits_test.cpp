// round_significant: what commgate stores for people to read (status.decision's
// predictedCommShare, shown in kubectl's CommShare column) keeps 4 significant digits.
#include "core/significant_digits.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "core/decision.h"

namespace commgate {
namespace COMMGATE_TEST_UNIT {

struct RoundCase {
  std::string name;
  double value;
  double want;
};

void PrintTo(const RoundCase& c, std::ostream* os) {
  *os << c.name;
}

class RoundSignificant : public ::testing::TestWithParam<RoundCase> {};

TEST_P(RoundSignificant, keeps_four_significant_digits) {
  const RoundCase& c = GetParam();
  EXPECT_EQ(round_significant(c.value), c.want);
}

INSTANTIATE_TEST_SUITE_P(
    Shares, RoundSignificant,
    ::testing::Values(RoundCase{"the_share_kubectl_showed_in_full", 0.013136288998357884, 0.01314},
                      RoundCase{"a_share_above_a_tenth", 0.45678912, 0.4568},
                      RoundCase{"half_rounds_away_from_zero", 0.123450001, 0.1235},
                      RoundCase{"four_digits_stay_as_they_are", 0.3, 0.3},
                      RoundCase{"a_whole_share", 1.0, 1.0}, RoundCase{"zero_stays_zero", 0.0, 0.0},
                      RoundCase{"a_tiny_share_keeps_its_digits", 0.000012345678, 0.00001235},
                      RoundCase{"numbers_above_one_too", 1234.5678, 1235.0}),
    [](const ::testing::TestParamInfo<RoundCase>& param_info) { return param_info.param.name; });

TEST(RoundSignificantEdges, infinities_and_nan_are_kept) {
  EXPECT_EQ(round_significant(std::numeric_limits<double>::infinity()),
            std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isnan(round_significant(std::numeric_limits<double>::quiet_NaN())));
}

// decision_to_json is what every writer of status.decision uses (the operator, commgate
// evaluate -o json): the share it stores is the rounded one; the decision itself keeps
// the full number.
TEST(RoundSignificantEdges, decision_to_json_stores_the_predicted_share_rounded) {
  Decision d;
  d.requested_nodes = 4;
  d.admitted_nodes = 4;
  StepPrediction p;
  p.nodes = 4;
  p.comm_share = 0.013136288998357884;
  d.predictions.push_back(p);
  EXPECT_EQ(decision_to_json(d)["predictedCommShare"], 0.01314);
  EXPECT_EQ(d.prediction_for(4)->comm_share, 0.013136288998357884);
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate
