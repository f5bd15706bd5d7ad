// core/merge_patch.h: the patch between two objects, table-driven; applying it (nlohmann's
// RFC 7386 merge_patch) to the first gives the second.
#include "core/merge_patch.h"

#include <gtest/gtest.h>

namespace commgate {
namespace COMMGATE_TEST_UNIT {

using nlohmann::json;

struct MergePatchCase {
  const char* name;
  json before;
  json after;
  json want;
};

class MergePatchTable : public ::testing::TestWithParam<MergePatchCase> {};

TEST_P(MergePatchTable, turns_before_into_after) {
  const auto& c = GetParam();
  const json patch = merge_patch_from(c.before, c.after);
  EXPECT_EQ(patch, c.want);
  json applied = c.before;
  applied.merge_patch(patch);
  EXPECT_EQ(applied, c.after);
}

const MergePatchCase kMergePatchCases[] = {
    {"equal", {{"a", 1}}, {{"a", 1}}, json::object()},
    {"a_field_dropped_is_null", {{"a", 1}, {"b", 2}}, {{"a", 1}}, {{"b", nullptr}}},
    {"a_field_added", {{"a", 1}}, {{"a", 1}, {"c", "x"}}, {{"c", "x"}}},
    {"nested_objects_field_by_field",
     {{"probe", {{"maxNodes", 4}, {"timeoutSeconds", 60}}}},
     {{"probe", {{"maxNodes", 8}}}},
     {{"probe", {{"maxNodes", 8}, {"timeoutSeconds", nullptr}}}}},
    {"arrays_are_replaced_whole", {{"l", {1, 2, 3}}}, {{"l", {1}}}, {{"l", {1}}}},
    {"an_object_replacing_a_scalar", {{"a", 1}}, {{"a", {{"b", 2}}}}, {{"a", {{"b", 2}}}}},
    {"from_nothing", nullptr, {{"a", 1}}, {{"a", 1}}},
};

INSTANTIATE_TEST_SUITE_P(Cases, MergePatchTable, ::testing::ValuesIn(kMergePatchCases),
                         [](const auto& p) { return std::string(p.param.name); });

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate
