// sim/managed_fields.h and sim/server_side_apply.h without HTTP: field sets and their
// FieldsV1 form, table-driven; then apply and update ownership on JSON objects, with the
// list types of a CRD schema, conflicts and force.
#include "sim/managed_fields.h"

#include <gtest/gtest.h>

#include "sim/api_status.h"
#include "sim/server_side_apply.h"

namespace commgate::sim {
namespace COMMGATE_TEST_UNIT {

using nlohmann::json;

FieldSet set_of(const std::vector<FieldPath>& paths) {
  FieldSet s;
  for (const auto& p : paths) s.insert(p);
  return s;
}

const std::string kSpec = field_element("spec");

TEST(FieldSetTest, encodes_fieldsv1_with_dot_for_members_with_children) {
  struct Case {
    std::vector<FieldPath> paths;
    json want;
  };
  const std::vector<Case> cases = {
      {{{field_element("data"), field_element("a")}}, {{"f:data", {{"f:a", json::object()}}}}},
      {{{field_element("metadata"), field_element("labels")},
        {field_element("metadata"), field_element("labels"), field_element("app")}},
       {{"f:metadata", {{"f:labels", {{".", json::object()}, {"f:app", json::object()}}}}}}},
      {{{kSpec, field_element("c"), key_element({{"name", "a"}})},
        {kSpec, field_element("c"), key_element({{"name", "a"}}), field_element("image")}},
       {{"f:spec",
         {{"f:c",
           {{"k:{\"name\":\"a\"}", {{".", json::object()}, {"f:image", json::object()}}}}}}}}},
      {{{kSpec, field_element("tags"), value_element("x")}},
       {{"f:spec", {{"f:tags", {{"v:\"x\"", json::object()}}}}}}},
      {{{kSpec, field_element("items"), index_element(2)}},
       {{"f:spec", {{"f:items", {{"i:2", json::object()}}}}}}},
  };
  for (const auto& c : cases) {
    const FieldSet s = set_of(c.paths);
    EXPECT_EQ(to_fields_v1(s), c.want) << c.want.dump();
    EXPECT_EQ(from_fields_v1(c.want), s) << c.want.dump();
  }
}

TEST(FieldSetTest, refuses_unknown_path_elements) {
  EXPECT_THROW(from_fields_v1({{"x:y", json::object()}}), std::runtime_error);
  EXPECT_THROW(from_fields_v1({{"f:y", 1}}), std::runtime_error);
}

TEST(FieldSetTest, prints_paths_as_upstream) {
  struct Case {
    FieldPath path;
    std::string want;
  };
  const std::vector<Case> cases = {
      {{kSpec, field_element("x")}, ".spec.x"},
      {{kSpec, field_element("c"), key_element({{"name", "a"}}), field_element("image")},
       ".spec.c[name=\"a\"].image"},
      {{kSpec, field_element("p"), key_element({{"port", 80}, {"protocol", "TCP"}})},
       ".spec.p[port=80,protocol=\"TCP\"]"},
      {{kSpec, field_element("tags"), value_element("x")}, ".spec.tags[=\"x\"]"},
      {{kSpec, index_element(3)}, ".spec[3]"},
  };
  for (const auto& c : cases) EXPECT_EQ(path_string(c.path), c.want);
}

TEST(FieldSetTest, set_operations) {
  const FieldPath a = {kSpec, field_element("a")}, b = {kSpec, field_element("b")};
  const FieldPath spec = {kSpec};
  const FieldSet ab = set_of({a, b}), just_a = set_of({a});
  EXPECT_EQ(field_set_union(just_a, set_of({b})), ab);
  EXPECT_EQ(field_set_difference(ab, just_a), set_of({b}));
  EXPECT_EQ(field_set_intersection(ab, set_of({b, spec})), set_of({b}));
  // Difference removes members only; the recursive one whole subtrees.
  EXPECT_EQ(field_set_difference(ab, set_of({spec})), ab);
  EXPECT_TRUE(field_set_recursive_difference(ab, set_of({spec})).empty());
  EXPECT_TRUE(ab.has_member_below(spec));
  EXPECT_FALSE(ab.has_member_below(a));
}

TEST(FieldManagerTest, manager_defaults_to_the_user_agent_prefix) {
  EXPECT_EQ(field_manager_name("", "kubectl/v1.32.0 (linux/amd64) kubernetes/abc"), "kubectl");
  EXPECT_EQ(field_manager_name("mine", "kubectl/v1.32.0"), "mine");
  EXPECT_EQ(field_manager_name("", "OpenAPI-Generator/31.0.0/python"), "OpenAPI-Generator");
}

ManagedFieldsContext builtin_ctx() {
  ManagedFieldsContext c;
  c.api_version = "v1";
  c.now = "2026-12-06T10:00:00Z";
  return c;
}

json cm(const json& data) {
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata", {{"name", "c"}, {"namespace", "default"}, {"uid", "u1"}}},
          {"data", data}};
}

json entries(const json& object) {
  return object["metadata"].value("managedFields", json());
}

TEST(FieldManagerTest, create_by_update_owns_what_it_set_and_strips_server_metadata) {
  const json out = track_update(nullptr, cm({{"a", "1"}}), "kubectl-create", builtin_ctx());
  ASSERT_EQ(entries(out).size(), 1u);
  const json e = entries(out)[0];
  EXPECT_EQ(e["manager"], "kubectl-create");
  EXPECT_EQ(e["operation"], "Update");
  EXPECT_EQ(e["apiVersion"], "v1");
  EXPECT_EQ(e["time"], "2026-12-06T10:00:00Z");
  EXPECT_EQ(e["fieldsType"], "FieldsV1");
  EXPECT_EQ(e["fieldsV1"], json({{"f:data", {{".", json::object()}, {"f:a", json::object()}}}}));
  EXPECT_FALSE(e.contains("subresource"));
}

TEST(FieldManagerTest, entry_times_are_written_back_in_utc) {
  // The Python client sends times back as "+00:00" (or another offset); upstream decodes
  // them as metav1.Time and writes "...Z".
  json live = cm({{"a", "1"}});
  live["metadata"]["managedFields"] = {{{"manager", "m"},
                                        {"operation", "Update"},
                                        {"apiVersion", "v1"},
                                        {"time", "2026-12-06T09:30:00+01:00"},
                                        {"fieldsType", "FieldsV1"},
                                        {"fieldsV1", {{"f:data", {{"f:a", json::object()}}}}}}};
  const json out = track_update(live, live, "m", builtin_ctx());
  EXPECT_EQ(entries(out)[0]["time"], "2026-12-06T08:30:00Z");
}

TEST(FieldManagerTest, update_of_an_untracked_object_is_not_tracked) {
  // skipnonapplied.go: an existing object without managedFields stays so on an Update.
  const json out = track_update(cm({{"a", "1"}}), cm({{"a", "2"}}), "m", builtin_ctx());
  EXPECT_TRUE(entries(out).is_null());
}

TEST(FieldManagerTest, apply_conflicts_with_another_manager_unless_forced) {
  const auto ctx = builtin_ctx();
  json live = apply_configuration(nullptr, cm({{"a", "1"}, {"b", "1"}}), "one", false, ctx);
  // The same value: shared, no conflict.
  live = apply_configuration(live, cm({{"a", "1"}}), "two", false, ctx);
  ASSERT_EQ(entries(live).size(), 2u);
  try {
    apply_configuration(live, cm({{"a", "2"}, {"b", "2"}}), "two", false, ctx);
    FAIL() << "no conflict";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.code(), 409);
    EXPECT_EQ(e.status()["reason"], "Conflict");
    EXPECT_EQ(e.status()["message"],
              "Apply failed with 2 conflicts: conflicts with \"one\":\n- .data.a\n- .data.b");
    ASSERT_EQ(e.status()["details"]["causes"].size(), 2u);
    EXPECT_EQ(e.status()["details"]["causes"][0], json({{"type", "FieldManagerConflict"},
                                                        {"message", "conflict with \"one\""},
                                                        {"field", ".data.a"}}));
  }
  const json forced = apply_configuration(live, cm({{"a", "2"}}), "two", true, ctx);
  EXPECT_EQ(forced["data"], json({{"a", "2"}, {"b", "1"}}));
  for (const auto& e : entries(forced)) {
    if (e["manager"] == "one")
      EXPECT_EQ(e["fieldsV1"], json({{"f:data", {{"f:b", json::object()}}}}));
    if (e["manager"] == "two")
      EXPECT_EQ(e["fieldsV1"], json({{"f:data", {{"f:a", json::object()}}}}));
  }
}

TEST(FieldManagerTest, update_conflicts_are_named_with_their_api_version) {
  const auto ctx = builtin_ctx();
  json live = track_update(nullptr, cm({{"a", "1"}}), "editor", ctx);
  try {
    apply_configuration(live, cm({{"a", "2"}}), "applier", false, ctx);
    FAIL() << "no conflict";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status()["message"],
              "Apply failed with 1 conflict: conflict with \"editor\" using v1: .data.a");
  }
}

TEST(FieldManagerTest, dropped_fields_are_removed_unless_another_manager_owns_them) {
  const auto ctx = builtin_ctx();
  json live =
      apply_configuration(nullptr, cm({{"a", "1"}, {"b", "1"}, {"c", "1"}}), "one", false, ctx);
  live = apply_configuration(live, cm({{"b", "1"}}), "two", false, ctx);
  live = apply_configuration(live, cm({{"c", "1"}}), "one", false, ctx);
  EXPECT_EQ(live["data"], json({{"b", "1"}, {"c", "1"}}));
  // An Update takes a field from its applier: dropping it then removes nothing.
  json edited = live;
  edited["data"]["c"] = "edited";
  live = track_update(live, edited, "kubectl-edit", ctx);
  live = apply_configuration(live, cm({{"x", "1"}}), "one", false, ctx);
  EXPECT_EQ(live["data"], json({{"b", "1"}, {"c", "edited"}, {"x", "1"}}));
}

TEST(FieldManagerTest, first_apply_to_an_untracked_object_meets_before_first_apply) {
  try {
    apply_configuration(cm({{"a", "1"}}), cm({{"a", "2"}}), "one", false, builtin_ctx());
    FAIL() << "no conflict";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status()["message"],
              "Apply failed with 1 conflict: conflict with \"before-first-apply\" using v1: "
              ".data.a");
  }
}

json crd_schema() {
  return json::parse(R"({
    "type": "object",
    "properties": {
      "spec": {"type": "object", "properties": {
        "replicas": {"type": "integer"},
        "ports": {"type": "array", "x-kubernetes-list-type": "map",
                  "x-kubernetes-list-map-keys": ["name"],
                  "items": {"type": "object", "properties": {
                    "name": {"type": "string"}, "port": {"type": "integer"}}}},
        "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
        "args": {"type": "array", "items": {"type": "string"}},
        "selector": {"type": "object", "x-kubernetes-map-type": "atomic",
                     "additionalProperties": {"type": "string"}}}},
      "status": {"type": "object", "properties": {"phase": {"type": "string"}}}}})");
}

json widget(const json& spec) {
  return {{"apiVersion", "x.io/v1"},
          {"kind", "Widget"},
          {"metadata", {{"name", "w"}, {"namespace", "default"}}},
          {"spec", spec}};
}

TEST(FieldManagerTest, crd_list_types_merge_by_key_set_and_atomic) {
  const json schema = crd_schema();
  ManagedFieldsContext ctx = builtin_ctx();
  ctx.schema = &schema;
  ctx.api_version = "x.io/v1";
  ctx.status_subresource = true;
  json live = apply_configuration(nullptr,
                                  widget({{"ports", {{{"name", "a"}, {"port", 1}}}},
                                          {"tags", {"x"}},
                                          {"args", {"1"}},
                                          {"selector", {{"k", "v"}}}}),
                                  "one", false, ctx);
  EXPECT_EQ(entries(live)[0]["fieldsV1"],
            json::parse(R"({"f:spec":{"f:args":{},"f:ports":{"k:{\"name\":\"a\"}":{".":{},
              "f:name":{},"f:port":{}}},"f:selector":{},"f:tags":{"v:\"x\"":{}}}})"));
  live = apply_configuration(live,
                             widget({{"ports", {{{"name", "b"}, {"port", 2}}}}, {"tags", {"y"}}}),
                             "two", false, ctx);
  // Merged by key and by value; the atomic list conflicts instead.
  EXPECT_EQ(live["spec"]["ports"].size(), 2u);
  EXPECT_EQ(live["spec"]["tags"], json({"x", "y"}));
  try {
    apply_configuration(live, widget({{"args", {"3"}}}), "two", false, ctx);
    FAIL() << "no conflict";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status()["details"]["causes"][0]["field"], ".spec.args");
  }
  try {
    apply_configuration(live, widget({{"ports", {{{"name", "a"}, {"port", 9}}}}}), "two", false,
                        ctx);
    FAIL() << "no conflict";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status()["details"]["causes"][0]["field"], ".spec.ports[name=\"a\"].port");
  }
  // "one" drops its port and tag: removed, the other manager's stay.
  live = apply_configuration(live, widget({{"args", {"1"}}}), "one", false, ctx);
  EXPECT_EQ(live["spec"]["ports"], json({{{"name", "b"}, {"port", 2}}}));
  EXPECT_EQ(live["spec"]["tags"], json({"y"}));
  EXPECT_FALSE(live["spec"].contains("selector"));
}

TEST(FieldManagerTest, status_writes_own_only_status_with_the_subresource) {
  const json schema = crd_schema();
  ManagedFieldsContext ctx = builtin_ctx();
  ctx.schema = &schema;
  ctx.api_version = "x.io/v1";
  ctx.status_subresource = true;
  json live = apply_configuration(nullptr, widget({{"replicas", 1}}), "one", false, ctx);
  // A main write owns no status.
  json with_status = widget({{"replicas", 1}});
  with_status["status"] = {{"phase", "A"}};
  json main = apply_configuration(live, with_status, "one", false, ctx);
  EXPECT_EQ(entries(main)[0]["fieldsV1"], json({{"f:spec", {{"f:replicas", json::object()}}}}));
  ctx.subresource = "status";
  json status_write = live;
  status_write["status"] = {{"phase", "A"}};
  const json out = track_update(live, status_write, "ctl", ctx);
  ASSERT_EQ(entries(out).size(), 2u);
  const json e = entries(out)[1];
  EXPECT_EQ(e["manager"], "ctl");
  EXPECT_EQ(e["subresource"], "status");
  EXPECT_EQ(e["fieldsV1"],
            json({{"f:status", {{".", json::object()}, {"f:phase", json::object()}}}}));
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::sim
