// kube-apiserver's update rules for batch/v1 Jobs as the sim applies them
// (sim/job_update_validation.h).
#include "sim/job_update_validation.h"

#include <gtest/gtest.h>

namespace commgate::sim {
namespace COMMGATE_TEST_UNIT {

using nlohmann::json;

json indexed_job(int completions, int parallelism) {
  return {{"spec",
           {{"completionMode", "Indexed"},
            {"completions", completions},
            {"parallelism", parallelism},
            {"selector", {{"matchLabels", {{"a", "b"}}}}},
            {"template", {{"spec", {{"containers", {{{"name", "c"}, {"image", "i"}}}}}}}}}}};
}

TEST(JobUpdateValidation, follows_upstreams_rules_for_size_template_and_selector) {
  struct Case {
    const char* what;
    json old_job, new_job;
    std::vector<std::string> fields;  // the fields refused, in order
    std::string message;              // of the first error, when one
  };
  json non_indexed = indexed_job(4, 4);
  non_indexed["spec"].erase("completionMode");
  json non_indexed_more = non_indexed;
  non_indexed_more["spec"]["completions"] = 8;
  non_indexed_more["spec"]["parallelism"] = 8;
  json new_image = indexed_job(4, 4);
  new_image["spec"]["template"]["spec"]["containers"][0]["image"] = "other";
  json suspended = indexed_job(4, 4);
  suspended["spec"]["suspend"] = true;
  json suspended_new_image = new_image;
  suspended_new_image["spec"]["suspend"] = true;
  json new_selector = indexed_job(4, 4);
  new_selector["spec"]["selector"]["matchLabels"]["a"] = "c";
  json not_indexed_now = indexed_job(4, 4);
  not_indexed_now["spec"]["completionMode"] = "NonIndexed";
  const Case cases[] = {
      {"nothing changed", indexed_job(4, 4), indexed_job(4, 4), {}, ""},
      {"parallelism alone, up", indexed_job(4, 4), indexed_job(4, 64), {}, ""},
      {"parallelism alone, down", indexed_job(4, 4), indexed_job(4, 1), {}, ""},
      {"an Indexed Job's completions with parallelism (elastic)",
       indexed_job(4, 4),
       indexed_job(64, 64),
       {},
       ""},
      {"an Indexed Job's completions without parallelism",
       indexed_job(4, 4),
       indexed_job(64, 4),
       {"spec.completions"},
       "Invalid value: 64: can only be modified in tandem with spec.parallelism"},
      {"a NonIndexed Job's completions",
       non_indexed,
       non_indexed_more,
       {"spec.completions"},
       "Invalid value: 8: field is immutable"},
      {"the template",
       indexed_job(4, 4),
       new_image,
       {"spec.template"},
       "Invalid value: core.PodTemplateSpec{...}: field is immutable"},
      {"a suspended Job's template", suspended, suspended_new_image, {}, ""},
      {"the selector", indexed_job(4, 4), new_selector, {"spec.selector"}, ""},
      {"the completion mode", indexed_job(4, 4), not_indexed_now, {"spec.completionMode"}, ""},
  };
  for (const auto& c : cases) {
    const auto errors = job_update_errors(c.old_job, c.new_job);
    std::vector<std::string> fields;
    for (const auto& e : errors) fields.push_back(e.field);
    EXPECT_EQ(fields, c.fields) << c.what;
    if (!c.message.empty() && !errors.empty()) {
      EXPECT_EQ(errors[0].message, c.message) << c.what;
    }
  }
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::sim
