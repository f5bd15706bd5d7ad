// The simulated cluster's store, without HTTP: write rules, CRDs, list and watch.
#include "sim/object_store.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "core/yaml_json.h"
#include "sim/api_status.h"

namespace commgate::sim {
namespace COMMGATE_TEST_UNIT {

using nlohmann::json;

ResourceInfo resource(ObjectStore& store, const std::string& group, const std::string& version,
                      const std::string& plural) {
  auto r = store.find_resource(group, version, plural);
  EXPECT_TRUE(r.has_value()) << group << "/" << version << "/" << plural;
  return r.value_or(ResourceInfo{});
}

json a_configmap(const std::string& name, json labels = json::object()) {
  return {{"metadata", {{"name", name}, {"labels", labels}}}, {"data", {{"k", "v"}}}};
}

json trainingjob_crd() {
  std::ifstream in(std::string(COMMGATE_SOURCE_DIR) + "/crds/trainingjobs.commgate.io.yaml");
  std::stringstream text;
  text << in.rdbuf();
  return yaml_documents_to_json(text.str()).at(0);
}

int error_code_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ApiError& e) {
    return e.code();
  }
  return 0;
}

TEST(ObjectStore, starts_with_default_and_kube_system_namespaces) {
  ObjectStore store;
  auto ns = resource(store, "", "v1", "namespaces");
  EXPECT_EQ(store.get(ns, "", "default")["status"]["phase"], "Active");
  EXPECT_NO_THROW(store.get(ns, "", "kube-system"));
}

TEST(ObjectStore, every_namespace_carries_its_name_as_the_metadata_name_label) {
  ObjectStore store;
  auto ns = resource(store, "", "v1", "namespaces");
  EXPECT_EQ(store.get(ns, "", "default")["metadata"]["labels"]["kubernetes.io/metadata.name"],
            "default");
  json created =
      store.create(ns, "", {{"metadata", {{"name", "vision"}, {"labels", {{"team", "vision"}}}}}});
  EXPECT_EQ(created["metadata"]["labels"],
            json({{"team", "vision"}, {"kubernetes.io/metadata.name", "vision"}}));
  // A writer cannot change or drop it (namespaceStrategy.PrepareForUpdate sets it again).
  json edited = created;
  edited["metadata"]["labels"] = {{"kubernetes.io/metadata.name", "other"}};
  json updated = store.update(ns, "", "vision", edited, WritePart::kMain);
  EXPECT_EQ(updated["metadata"]["labels"], json({{"kubernetes.io/metadata.name", "vision"}}));
}

TEST(ObjectStore, create_sets_uid_version_timestamp_and_generation) {
  ObjectStore store;
  auto cm = resource(store, "", "v1", "configmaps");
  const uint64_t before = store.resource_version();
  json obj = store.create(cm, "default", a_configmap("one"));
  EXPECT_EQ(obj["metadata"]["resourceVersion"], std::to_string(before + 1));
  EXPECT_EQ(obj["metadata"]["uid"].get<std::string>().size(), 36u);
  EXPECT_EQ(obj["metadata"]["uid"].get<std::string>()[14], '4');
  EXPECT_TRUE(obj["metadata"].contains("creationTimestamp"));
  EXPECT_FALSE(obj["metadata"].contains("generation"));  // ConfigMaps have none upstream
  EXPECT_EQ(obj["metadata"]["namespace"], "default");
  EXPECT_EQ(obj["kind"], "ConfigMap");
  EXPECT_EQ(obj["apiVersion"], "v1");
  auto jobs = resource(store, "batch", "v1", "jobs");
  EXPECT_EQ(store.create(jobs, "default", a_configmap("job"))["metadata"]["generation"], 1);
}

TEST(ObjectStore, generate_name_makes_a_unique_name) {
  ObjectStore store;
  auto cm = resource(store, "", "v1", "configmaps");
  json a = store.create(cm, "default", {{"metadata", {{"generateName", "probe-"}}}});
  json b = store.create(cm, "default", {{"metadata", {{"generateName", "probe-"}}}});
  EXPECT_EQ(a["metadata"]["name"].get<std::string>().rfind("probe-", 0), 0u);
  EXPECT_EQ(a["metadata"]["name"].get<std::string>().size(), 11u);
  EXPECT_NE(a["metadata"]["name"], b["metadata"]["name"]);
}

TEST(ObjectStore, rejects_missing_namespace_duplicate_and_bad_names) {
  ObjectStore store;
  auto cm = resource(store, "", "v1", "configmaps");
  EXPECT_EQ(error_code_of([&] { store.create(cm, "nowhere", a_configmap("x")); }), 404);
  store.create(cm, "default", a_configmap("x"));
  EXPECT_EQ(error_code_of([&] { store.create(cm, "default", a_configmap("x")); }), 409);
  EXPECT_EQ(error_code_of([&] { store.create(cm, "default", a_configmap("Bad_Name")); }), 422);
  EXPECT_EQ(error_code_of([&] { store.create(cm, "default", json::object()); }), 422);
}

TEST(ObjectStore, rbac_names_are_path_segments_as_upstreams_bootstrap_roles_need) {
  ObjectStore store;
  auto roles = resource(store, "rbac.authorization.k8s.io", "v1", "clusterroles");
  const json role = {{"metadata", {{"name", "system:aggregate-to-edit"}}},
                     {"rules", json::array()}};
  EXPECT_EQ(error_code_of([&] { store.create(roles, "", role); }), 0);
  for (const char* bad : {"a/b", "..", "a%b"}) {
    json r = role;
    r["metadata"]["name"] = bad;
    EXPECT_EQ(error_code_of([&] { store.create(roles, "", r); }), 422) << bad;
  }
}

TEST(ObjectStore, stale_update_is_a_conflict_and_generation_follows_spec) {
  ObjectStore store;
  auto cm = resource(store, "batch", "v1", "jobs");  // a kind with metadata.generation
  json v1 = store.create(cm, "default", a_configmap("x"));
  json v2 = v1;
  v2["spec"]["parallelism"] = 2;
  json stored = store.update(cm, "default", "x", v2, WritePart::kMain);
  EXPECT_EQ(stored["metadata"]["generation"], 2);
  json labels_only = stored;
  labels_only["metadata"]["labels"] = {{"a", "b"}};
  EXPECT_EQ(
      store.update(cm, "default", "x", labels_only, WritePart::kMain)["metadata"]["generation"], 2);
  EXPECT_EQ(error_code_of([&] { store.update(cm, "default", "x", v2, WritePart::kMain); }), 409);
}

TEST(ObjectStore, status_subresource_isolates_status_from_spec) {
  ObjectStore store;
  auto jobs = resource(store, "batch", "v1", "jobs");
  json job = store.create(jobs, "default",
                          {{"metadata", {{"name", "j"}}}, {"spec", {{"parallelism", 1}}}});
  json status_write = job;
  status_write["status"] = {{"active", 1}};
  status_write["spec"]["parallelism"] = 5;  // ignored by the status subresource
  json after_status = store.update(jobs, "default", "j", status_write, WritePart::kStatus);
  EXPECT_EQ(after_status["status"]["active"], 1);
  EXPECT_EQ(after_status["spec"]["parallelism"], 1);
  json main_write = after_status;
  main_write["status"] = {{"active", 9}};  // ignored by the main resource
  main_write["spec"]["parallelism"] = 2;
  json after_main = store.update(jobs, "default", "j", main_write, WritePart::kMain);
  EXPECT_EQ(after_main["status"]["active"], 1);
  EXPECT_EQ(after_main["spec"]["parallelism"], 2);
}

TEST(ObjectStore, crd_adds_and_removes_its_resource) {
  ObjectStore store;
  auto crds = resource(store, "apiextensions.k8s.io", "v1", "customresourcedefinitions");
  json crd = store.create(crds, "", trainingjob_crd());
  EXPECT_EQ(crd["status"]["conditions"][1]["type"], "Established");
  auto tj = store.find_resource("commgate.io", "v1alpha1", "trainingjobs");
  ASSERT_TRUE(tj.has_value());
  EXPECT_TRUE(tj->namespaced);
  EXPECT_TRUE(tj->status_subresource);
  ASSERT_TRUE(tj->scale.has_value());
  EXPECT_EQ(tj->scale->spec_replicas_path, ".spec.numNodes");
  EXPECT_EQ(tj->short_names, std::vector<std::string>{"tj"});
  EXPECT_FALSE(tj->printer_columns.empty());
  // A CR with a status subresource drops .status on create.
  json created =
      store.create(*tj, "default", {{"metadata", {{"name", "a"}}}, {"status", {{"phase", "X"}}}});
  EXPECT_FALSE(created.contains("status"));
  store.remove(crds, "", "trainingjobs.commgate.io");
  EXPECT_FALSE(store.find_resource("commgate.io", "v1alpha1", "trainingjobs").has_value());
}

// A rule the sim cannot evaluate is refused with the CRD, at its path, as kube-apiserver
// refuses a rule that does not compile (not at the first object written).
TEST(ObjectStore, a_crd_whose_cel_rule_does_not_compile_is_refused_at_its_path) {
  ObjectStore store;
  auto crds = resource(store, "apiextensions.k8s.io", "v1", "customresourcedefinitions");
  json crd = trainingjob_crd();
  crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
     ["x-kubernetes-validations"] = {{{"rule", "self.numNodes <="}}};
  try {
    store.create(crds, "", crd);
    FAIL() << "created";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.code(), 422);
    EXPECT_NE(std::string(e.what()).find(
                  "spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-"
                  "validations[0].rule: Invalid value: \"self.numNodes <=\": compilation failed: "
                  "Syntax error: the rule ends early"),
              std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(store.find_resource("commgate.io", "v1alpha1", "trainingjobs").has_value());

  // Valid CEL outside the subset (upstream CRDs such as Kueue's use list macros and
  // transition rules): the CRD is served, and such a rule is not evaluated.
  crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
     ["x-kubernetes-validations"] = {{{"rule", "self.tolerations.all(t, has(t.key))"}},
                                     {{"rule", "self.numNodes >= oldSelf.numNodes"}}};
  store.create(crds, "", crd);
  EXPECT_TRUE(store.find_resource("commgate.io", "v1alpha1", "trainingjobs").has_value());
}

TEST(ObjectStore, list_filters_by_labels_and_fields_and_pages_with_continue) {
  ObjectStore store;
  auto cm = resource(store, "", "v1", "configmaps");
  for (const char* n : {"a", "b", "c", "d"})
    store.create(cm, "default", a_configmap(n, {{"tier", std::string(n) < "c" ? "web" : "db"}}));
  ListOptions web;
  web.labels = LabelSelectorQuery::parse("tier=web");
  EXPECT_EQ(store.list(cm, "default", web).items.size(), 2u);
  ListOptions set_based;
  set_based.labels = LabelSelectorQuery::parse("tier in (db, cache),tier!=web");
  EXPECT_EQ(store.list(cm, "", set_based).items.size(), 2u);
  ListOptions by_name;
  by_name.fields = FieldSelectorQuery::parse("metadata.name=c,metadata.namespace=default");
  ASSERT_EQ(store.list(cm, "", by_name).items.size(), 1u);
  ListOptions page;
  page.limit = 3;
  ListResult first = store.list(cm, "default", page);
  ASSERT_EQ(first.items.size(), 3u);
  ASSERT_FALSE(first.continue_token.empty());
  page.continue_token = first.continue_token;
  ListResult second = store.list(cm, "default", page);
  ASSERT_EQ(second.items.size(), 1u);
  EXPECT_EQ(second.items[0]["metadata"]["name"], "d");
  EXPECT_TRUE(second.continue_token.empty());
}

TEST(ObjectStore, watch_replays_history_then_goes_live_and_expires_old_versions) {
  ObjectStore::Options options;
  options.history_limit = 4;
  ObjectStore store(options);
  auto cm = resource(store, "", "v1", "configmaps");
  const uint64_t start = store.resource_version();
  store.create(cm, "default", a_configmap("a"));
  store.create(cm, "default", a_configmap("b", {{"x", "y"}}));
  std::vector<std::string> seen;
  WatchRequest w;
  w.from = start;
  w.labels = LabelSelectorQuery::parse("x=y");
  w.deliver = [&](const WatchEvent& e) {
    seen.push_back(e.type + ":" + e.object["metadata"]["name"].get<std::string>());
    return true;
  };
  const uint64_t id = store.watch(cm, w);
  EXPECT_EQ(seen, std::vector<std::string>{"ADDED:b"});
  store.create(cm, "default", a_configmap("c", {{"x", "y"}}));
  store.remove(cm, "default", "b");
  EXPECT_EQ(seen, (std::vector<std::string>{"ADDED:b", "ADDED:c", "DELETED:b"}));
  store.unwatch(id);
  for (const char* n : {"d", "e", "f", "g"}) store.create(cm, "default", a_configmap(n));
  WatchRequest old;
  old.from = start;
  old.deliver = [](const WatchEvent&) { return true; };
  try {
    store.watch(cm, old);
    FAIL() << "a watch from a compacted version must fail";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.code(), 410);
    EXPECT_EQ(e.status()["reason"], "Expired");
  }
}

TEST(ObjectStore, watch_with_a_selector_sees_objects_enter_and_leave_it) {
  ObjectStore store;
  auto cm = resource(store, "", "v1", "configmaps");
  json obj = store.create(cm, "default", a_configmap("a", {{"x", "n"}}));
  std::vector<std::string> seen;
  WatchRequest w;
  w.from = store.resource_version();
  w.labels = LabelSelectorQuery::parse("x=y");
  w.deliver = [&](const WatchEvent& e) {
    seen.push_back(e.type);
    return true;
  };
  store.watch(cm, w);
  for (const char* value : {"y", "y", "n"}) {
    obj = store.get(cm, "default", "a");
    obj["metadata"]["labels"]["x"] = value;
    obj["data"]["k"] = std::string("v") + value + std::to_string(seen.size());
    store.update(cm, "default", "a", obj, WritePart::kMain);
  }
  EXPECT_EQ(seen, (std::vector<std::string>{"ADDED", "MODIFIED", "DELETED"}));
}

TEST(LabelSelectorQuery, rejects_malformed_selectors) {
  EXPECT_THROW(LabelSelectorQuery::parse("a in x"), ApiError);
  EXPECT_THROW(LabelSelectorQuery::parse("a,,b"), ApiError);
  EXPECT_THROW(FieldSelectorQuery::parse("metadata.name"), ApiError);
  EXPECT_TRUE(LabelSelectorQuery::parse("!gpu").matches(json{{"metadata", json::object()}}));
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::sim
