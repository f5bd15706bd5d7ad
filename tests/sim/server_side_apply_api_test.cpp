// Server-side apply over the sim's HTTPS API: managedFields on every write, the 409 of a
// conflict and force, pruning of dropped fields, list-type map merging from a CRD's
// schema, /status applies and the uid/resourceVersion preconditions.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "sim/api_server.h"
#include "tests/server/test_client.h"

namespace commgate::sim {
namespace COMMGATE_TEST_UNIT {

using nlohmann::json;
using server::testing::Client;
using server::testing::Reply;

const char* kSsaCms = "/api/v1/namespaces/default/configmaps";
const char* kWidgets = "/apis/x.commgate.io/v1/namespaces/default/widgets";

json widget_crd() {
  return json::parse(R"({
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.x.commgate.io"},
    "spec": {"group": "x.commgate.io", "scope": "Namespaced",
      "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
      "versions": [{"name": "v1", "served": true, "storage": true,
        "subresources": {"status": {}},
        "schema": {"openAPIV3Schema": {"type": "object", "properties": {
          "spec": {"type": "object", "properties": {
            "size": {"type": "integer"},
            "ports": {"type": "array", "x-kubernetes-list-type": "map",
                      "x-kubernetes-list-map-keys": ["name"],
                      "items": {"type": "object", "required": ["name"], "properties": {
                        "name": {"type": "string"}, "port": {"type": "integer"}}}}}},
          "status": {"type": "object", "properties": {"phase": {"type": "string"}}}}}}}]}})");
}

class ServerSideApplyApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    api_.start();
    client_ = std::make_unique<Client>(api_.port(), api_.pki_dir() + "/ca.crt");
    ASSERT_EQ(client_->connect(), "");
  }
  Reply call(const std::string& method, const std::string& target, const std::string& body,
             const std::string& content_type = "application/json",
             const std::string& user_agent = "") {
    std::vector<std::pair<std::string, std::string>> headers = {
        {"Authorization", "Bearer " + api_.token()}, {"Content-Type", content_type}};
    if (!user_agent.empty()) headers.emplace_back("User-Agent", user_agent);
    return client_->request(method, target, body, headers);
  }
  Reply apply(const std::string& target, const json& config, const std::string& manager,
              bool force = false) {
    return call("PATCH", target + "?fieldManager=" + manager + (force ? "&force=true" : ""),
                config.dump(), "application/apply-patch+yaml");
  }
  json get(const std::string& target) { return json::parse(call("GET", target, "").body); }
  static json entry_of(const json& object, const std::string& manager) {
    for (const auto& e : object["metadata"]["managedFields"])
      if (e["manager"] == manager) return e;
    return nullptr;
  }

  ApiServer api_;
  std::unique_ptr<Client> client_;
};

json ssa_cm(const json& data) {
  return {
      {"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"metadata", {{"name", "c"}}}, {"data", data}};
}

TEST_F(ServerSideApplyApiTest, create_and_updates_record_their_managers) {
  // The manager of an Update without ?fieldManager is the User-Agent's first part.
  Reply r = call("POST", kSsaCms, ssa_cm({{"a", "1"}}).dump(), "application/json",
                 "kubectl/v1.32.0 (linux/amd64) kubernetes/abc");
  ASSERT_EQ(r.status, 201) << r.body;
  json e = entry_of(json::parse(r.body), "kubectl");
  ASSERT_FALSE(e.is_null()) << r.body;
  EXPECT_EQ(e["operation"], "Update");
  EXPECT_EQ(e["apiVersion"], "v1");
  EXPECT_EQ(e["fieldsV1"], json::parse(R"({"f:data":{".":{},"f:a":{}}})"));
  r = call("PATCH", std::string(kSsaCms) + "/c?fieldManager=patcher", R"({"data":{"b":"2"}})",
           "application/merge-patch+json");
  ASSERT_EQ(r.status, 200) << r.body;
  e = entry_of(json::parse(r.body), "patcher");
  EXPECT_EQ(e["fieldsV1"], json::parse(R"({"f:data":{"f:b":{}}})"));
}

TEST_F(ServerSideApplyApiTest, conflict_is_409_until_forced) {
  ASSERT_EQ(apply(std::string(kSsaCms) + "/c", ssa_cm({{"a", "1"}}), "one").status, 201);
  // Same value: shared ownership.
  ASSERT_EQ(apply(std::string(kSsaCms) + "/c", ssa_cm({{"a", "1"}}), "two").status, 200);
  Reply r = apply(std::string(kSsaCms) + "/c", ssa_cm({{"a", "2"}}), "three");
  ASSERT_EQ(r.status, 409) << r.body;
  const json s = json::parse(r.body);
  EXPECT_EQ(s["kind"], "Status");
  EXPECT_EQ(s["reason"], "Conflict");
  EXPECT_EQ(s["message"],
            "Apply failed with 2 conflicts: conflicts with \"one\":\n- .data.a\n"
            "conflicts with \"two\":\n- .data.a");
  EXPECT_EQ(s["details"]["causes"][0]["type"], "FieldManagerConflict");
  EXPECT_EQ(s["details"]["causes"][0]["field"], ".data.a");
  r = apply(std::string(kSsaCms) + "/c", ssa_cm({{"a", "2"}}), "three", true);
  ASSERT_EQ(r.status, 200) << r.body;
  const json obj = json::parse(r.body);
  EXPECT_EQ(obj["data"]["a"], "2");
  EXPECT_TRUE(entry_of(obj, "one").is_null());
  EXPECT_EQ(entry_of(obj, "three")["operation"], "Apply");
}

TEST_F(ServerSideApplyApiTest, a_dropped_field_goes_unless_another_manager_owns_it) {
  const std::string c = std::string(kSsaCms) + "/c";
  ASSERT_EQ(apply(c, ssa_cm({{"a", "1"}, {"b", "1"}, {"k", "1"}}), "one").status, 201);
  ASSERT_EQ(apply(c, ssa_cm({{"k", "1"}}), "two").status, 200);
  Reply r = apply(c, ssa_cm({{"a", "1"}}), "one");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body)["data"], json({{"a", "1"}, {"k", "1"}}));
}

TEST_F(ServerSideApplyApiTest, custom_resources_merge_map_lists_by_key_and_apply_status) {
  ASSERT_EQ(
      call("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", widget_crd().dump())
          .status,
      201);
  const std::string w = std::string(kWidgets) + "/w";
  auto widget = [](const json& spec) {
    return json{{"apiVersion", "x.commgate.io/v1"},
                {"kind", "Widget"},
                {"metadata", {{"name", "w"}}},
                {"spec", spec}};
  };
  ASSERT_EQ(apply(w, widget({{"ports", {{{"name", "a"}, {"port", 1}}}}}), "one").status, 201);
  Reply r = apply(w, widget({{"ports", {{{"name", "b"}, {"port", 2}}}}}), "two");
  ASSERT_EQ(r.status, 200) << r.body;
  json obj = json::parse(r.body);
  EXPECT_EQ(obj["spec"]["ports"].size(), 2u);
  EXPECT_EQ(
      entry_of(obj, "two")["fieldsV1"],
      json::parse(
          R"({"f:spec":{"f:ports":{"k:{\"name\":\"b\"}":{".":{},"f:name":{},"f:port":{}}}}})"));
  r = apply(w, widget({{"ports", {{{"name", "a"}, {"port", 5}}}}}), "two");
  ASSERT_EQ(r.status, 409) << r.body;
  EXPECT_EQ(json::parse(r.body)["message"],
            "Apply failed with 1 conflict: conflict with \"one\": .spec.ports[name=\"a\"].port");
  // Status through /status: only status fields, an entry with subresource status.
  json status_config = {{"apiVersion", "x.commgate.io/v1"},
                        {"kind", "Widget"},
                        {"metadata", {{"name", "w"}}},
                        {"spec", {{"size", 9}}},
                        {"status", {{"phase", "Ready"}}}};
  r = apply(w + "/status", status_config, "ctl");
  ASSERT_EQ(r.status, 200) << r.body;
  obj = get(w);
  EXPECT_EQ(obj["status"]["phase"], "Ready");
  EXPECT_FALSE(obj["spec"].contains("size"));
  const json e = entry_of(obj, "ctl");
  EXPECT_EQ(e["subresource"], "status");
  EXPECT_EQ(e["fieldsV1"], json::parse(R"({"f:status":{"f:phase":{}}})"));
}

TEST_F(ServerSideApplyApiTest, uid_and_resource_version_are_preconditions) {
  const std::string c = std::string(kSsaCms) + "/c";
  json config = ssa_cm({{"a", "1"}});
  config["metadata"]["uid"] = "nope";
  Reply r = apply(c, config, "one");
  ASSERT_EQ(r.status, 409) << r.body;
  EXPECT_EQ(json::parse(r.body)["message"],
            "Operation cannot be fulfilled on configmaps \"c\": uid mismatch: the provided object "
            "specified uid nope, and no existing object was found");
  config["metadata"].erase("uid");
  ASSERT_EQ(apply(c, config, "one").status, 201);
  config["metadata"]["resourceVersion"] = "1";
  r = apply(c, config, "one");
  ASSERT_EQ(r.status, 409) << r.body;
  EXPECT_EQ(json::parse(r.body)["reason"], "Conflict");
  config["metadata"]["resourceVersion"] = get(c)["metadata"]["resourceVersion"];
  config["metadata"]["uid"] = "other";
  r = apply(c, config, "one");
  EXPECT_EQ(r.status, 422) << r.body;
  config["metadata"]["uid"] = get(c)["metadata"]["uid"];
  EXPECT_EQ(apply(c, config, "one").status, 200);
  // managedFields may not be applied.
  config["metadata"]["managedFields"] = json::array();
  r = apply(c, config, "one");
  EXPECT_EQ(r.status, 400) << r.body;
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::sim
