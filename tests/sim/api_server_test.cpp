// The simulated API server over real HTTPS: auth, Status bodies, patch kinds, the status
// subresource, list selectors and paging, Table output and watch streams.
#include "sim/api_server.h"

#include <gtest/gtest.h>

#include <atomic>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "tests/server/test_client.h"

namespace commgate::sim {
namespace COMMGATE_TEST_UNIT {

using nlohmann::json;
using server::testing::Client;
using server::testing::Reply;

class ApiServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    api_.start();
    client_ = std::make_unique<Client>(api_.port(), api_.pki_dir() + "/ca.crt");
    ASSERT_EQ(client_->connect(), "");
  }

  Reply call(const std::string& method, const std::string& target, const std::string& body = "",
             const std::string& content_type = "application/json",
             const std::string& accept = "application/json") {
    return client_->request(method, target, body,
                            {{"Authorization", "Bearer " + api_.token()},
                             {"Content-Type", content_type},
                             {"Accept", accept}});
  }
  json call_json(const std::string& method, const std::string& target, const json& body = nullptr,
                 int want_status = 200, const std::string& content_type = "application/json") {
    Reply r = call(method, target, body.is_null() ? "" : body.dump(), content_type);
    EXPECT_EQ(r.status, want_status) << method << " " << target << ": " << r.body;
    return json::parse(r.body);
  }
  // A watch on its own connection, read until the server ends it (timeoutSeconds).
  std::vector<json> watch_events(const std::string& target) {
    Client watcher(api_.port(), api_.pki_dir() + "/ca.crt");
    EXPECT_EQ(watcher.connect(), "");
    watcher.write_raw("GET " + target + " HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " +
                      api_.token() + "\r\n\r\n");
    const std::string raw = watcher.read_raw_until_closed(std::chrono::milliseconds(5000));
    std::vector<json> events;
    // Chunked framing: take every line that parses as a JSON event.
    size_t pos = raw.find("\r\n\r\n");
    std::string line;
    for (size_t i = pos == std::string::npos ? 0 : pos + 4; i < raw.size(); ++i) {
      if (raw[i] != '\n') {
        line += raw[i];
        continue;
      }
      if (!line.empty() && line[0] == '{') events.push_back(json::parse(line));
      line.clear();
    }
    return events;
  }

  ApiServer api_;
  std::unique_ptr<Client> client_;
};

json configmap(const std::string& name, const std::string& tier) {
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata", {{"name", name}, {"labels", {{"tier", tier}}}}},
          {"data", {{"k", "v"}}}};
}

const char* kCms = "/api/v1/namespaces/default/configmaps";

TEST_F(ApiServerTest, answers_401_status_without_the_token) {
  Reply r = client_->request("GET", "/api/v1/namespaces", "", {{"Authorization", "Bearer wrong"}});
  EXPECT_EQ(r.status, 401);
  json s = json::parse(r.body);
  EXPECT_EQ(s["kind"], "Status");
  EXPECT_EQ(s["reason"], "Unauthorized");
}

TEST_F(ApiServerTest, discovery_lists_groups_and_resources_with_subresources) {
  json groups = call_json("GET", "/apis");
  EXPECT_EQ(groups["kind"], "APIGroupList");
  json core = call_json("GET", "/api/v1");
  bool pods_status = false;
  for (const auto& r : core["resources"]) pods_status |= r["name"] == "pods/status";
  EXPECT_TRUE(pods_status);
  call_json("GET", "/apis/commgate.io/v1alpha1", nullptr, 404);
  EXPECT_EQ(call_json("GET", "/version")["major"], "1");
}

TEST_F(ApiServerTest, not_found_conflict_and_invalid_have_the_upstream_status_bodies) {
  json nf = call_json("GET", std::string(kCms) + "/missing", nullptr, 404);
  EXPECT_EQ(nf, json::parse(R"({"kind":"Status","apiVersion":"v1","metadata":{},
      "status":"Failure","message":"configmaps \"missing\" not found","reason":"NotFound",
      "details":{"name":"missing","kind":"configmaps"},"code":404})"));

  json created = call_json("POST", kCms, configmap("a", "web"), 201);
  json stale = created;
  stale["data"]["k"] = "1";
  call_json("PUT", std::string(kCms) + "/a", stale);
  stale["data"]["k"] = "2";
  json conflict = call_json("PUT", std::string(kCms) + "/a", stale, 409);
  EXPECT_EQ(conflict["reason"], "Conflict");
  EXPECT_EQ(conflict["message"],
            "Operation cannot be fulfilled on configmaps \"a\": the object has been modified; "
            "please apply your changes to the latest version and try again");
  EXPECT_EQ(conflict["details"], json::parse(R"({"name":"a","kind":"configmaps"})"));

  json exists = call_json("POST", kCms, configmap("a", "web"), 409);
  EXPECT_EQ(exists["reason"], "AlreadyExists");

  json invalid = call_json("POST", kCms, configmap("Not_Valid", "web"), 422);
  EXPECT_EQ(invalid["reason"], "Invalid");
  EXPECT_EQ(invalid["details"]["kind"], "ConfigMap");
  EXPECT_EQ(invalid["details"]["causes"][0]["field"], "metadata.name");
  EXPECT_EQ(invalid["message"].get<std::string>().rfind("ConfigMap \"Not_Valid\" is invalid: ", 0),
            0u);
}

TEST_F(ApiServerTest, malformed_bodies_are_400_statuses) {
  Reply r = call("POST", kCms, "{not json");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(json::parse(r.body)["reason"], "BadRequest");
  EXPECT_EQ(call("GET", std::string(kCms) + "?labelSelector=a%20in%20x").status, 400);
  // dryRun: "All" is the only value there is; a dry run stores nothing.
  EXPECT_EQ(call("POST", std::string(kCms) + "?dryRun=Some", configmap("d", "x").dump()).status,
            400);
  EXPECT_EQ(call("POST", std::string(kCms) + "?dryRun=All", configmap("d", "x").dump()).status,
            201);
  EXPECT_EQ(call("GET", std::string(kCms) + "/d").status, 404);
}

TEST_F(ApiServerTest, patch_kinds_merge_json_strategic_and_apply) {
  call_json("POST", kCms, configmap("p", "web"), 201);
  const std::string item = std::string(kCms) + "/p";
  json merged =
      call_json("PATCH", item, {{"data", {{"m", "1"}}}}, 200, "application/merge-patch+json");
  EXPECT_EQ(merged["data"], json::parse(R"({"k":"v","m":"1"})"));
  json patched = call_json("PATCH", item, json::parse(R"([{"op":"remove","path":"/data/k"}])"), 200,
                           "application/json-patch+json");
  EXPECT_EQ(patched["data"], json::parse(R"({"m":"1"})"));
  json strategic = call_json("PATCH", item, {{"data", {{"s", "1"}}}}, 200,
                             "application/strategic-merge-patch+json");
  EXPECT_EQ(strategic["data"]["s"], "1");
  // Server-side apply, approximated: a fieldManager is required as upstream, the applied
  // configuration merges into the live object, and an absent object is created.
  const Reply no_manager = call("PATCH", item, "data: {a: b}", "application/apply-patch+yaml");
  EXPECT_EQ(no_manager.status, 422);
  EXPECT_NE(no_manager.body.find("fieldManager: Required value"), std::string::npos);
  json applied =
      call_json("PATCH", item + "?fieldManager=test", json::parse(R"({"data":{"a":"b"}})"), 200,
                "application/apply-patch+yaml");
  EXPECT_EQ(applied["data"]["a"], "b");
  EXPECT_EQ(applied["data"]["s"], "1");  // kept: no field ownership in the sim
  EXPECT_EQ(call("PATCH", std::string(kCms) + "/fresh?fieldManager=test",
                 "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: fresh}\ndata: {x: y}\n",
                 "application/apply-patch+yaml")
                .status,
            201);
  EXPECT_EQ(call("PATCH", std::string(kCms) + "/nope", "{}", "application/merge-patch+json").status,
            404);
  json failed =
      call_json("PATCH", item, json::parse(R"([{"op":"test","path":"/data/m","value":"x"}])"), 422,
                "application/json-patch+json");
  EXPECT_EQ(failed["kind"], "Status");
}

// Upstream applies a patch again to the newer object when its write conflicts (a patch
// names no version unless it sets one): concurrent merge patches of one object all land.
// The sim once took the version of the patched object as the client's, so a patch that
// met another write answered 409 (a chart test's `kubectl patch commpolicy` did, once).
TEST_F(ApiServerTest, concurrent_patches_all_land_and_only_a_named_version_conflicts) {
  call_json("POST", kCms, configmap("shared", "web"), 201);
  const std::string target = std::string(kCms) + "/shared";
  constexpr int kWriters = 4;
  constexpr int kPatches = 60;
  std::atomic<int> refused{0};
  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; ++w)
    writers.emplace_back([&, w] {
      Client c(api_.port(), api_.pki_dir() + "/ca.crt");
      if (!c.connect().empty()) return void(refused += kPatches);
      for (int i = 0; i < kPatches; ++i) {
        const json patch = {{"data", {{"w" + std::to_string(w) + "-" + std::to_string(i), "x"}}}};
        const Reply r = c.request("PATCH", target, patch.dump(),
                                  {{"Authorization", "Bearer " + api_.token()},
                                   {"Content-Type", "application/merge-patch+json"}});
        if (r.status != 200) {
          ++refused;
          ADD_FAILURE() << r.status << " " << r.body;
        }
      }
    });
  for (auto& t : writers) t.join();
  EXPECT_EQ(refused.load(), 0);
  const json stored = call_json("GET", target);
  EXPECT_EQ(stored["data"].size(), 1u + kWriters * kPatches) << stored.dump();

  // A patch that names a version is a precondition: a stale one conflicts.
  const json stale = {{"metadata", {{"resourceVersion", "1"}}}, {"data", {{"late", "x"}}}};
  EXPECT_EQ(call_json("PATCH", target, stale, 409, "application/merge-patch+json")["reason"],
            "Conflict");
  const json fresh = {{"metadata", {{"resourceVersion", stored["metadata"]["resourceVersion"]}}},
                      {"data", {{"late", "x"}}}};
  call_json("PATCH", target, fresh, 200, "application/merge-patch+json");
}

TEST_F(ApiServerTest, status_subresource_changes_only_status) {
  const std::string jobs = "/apis/batch/v1/namespaces/default/jobs";
  call_json("POST", jobs, {{"metadata", {{"name", "j"}}}, {"spec", {{"parallelism", 1}}}}, 201);
  json after = call_json("PATCH", jobs + "/j/status",
                         {{"status", {{"active", 1}}}, {"spec", {{"parallelism", 7}}}}, 200,
                         "application/merge-patch+json");
  EXPECT_EQ(after["status"]["active"], 1);
  EXPECT_EQ(after["spec"]["parallelism"], 1);
  json main = call_json("PATCH", jobs + "/j", {{"status", {{"active", 5}}}}, 200,
                        "application/merge-patch+json");
  EXPECT_EQ(main["status"]["active"], 1);
  call_json("GET", "/api/v1/namespaces/default/configmaps/x/status", nullptr, 404);
}

TEST_F(ApiServerTest, list_selectors_and_continue) {
  for (const char* n : {"a", "b", "c"})
    call_json("POST", kCms, configmap(n, n[0] == 'c' ? "db" : "web"), 201);
  json web = call_json("GET", std::string(kCms) + "?labelSelector=tier%3Dweb");
  EXPECT_EQ(web["kind"], "ConfigMapList");
  EXPECT_EQ(web["items"].size(), 2u);
  EXPECT_FALSE(web["metadata"]["resourceVersion"].get<std::string>().empty());
  json by_name = call_json("GET", "/api/v1/configmaps?fieldSelector=metadata.name%3Dc");
  ASSERT_EQ(by_name["items"].size(), 1u);
  json page = call_json("GET", std::string(kCms) + "?limit=2");
  ASSERT_EQ(page["items"].size(), 2u);
  const std::string token = page["metadata"]["continue"];
  json rest = call_json("GET", std::string(kCms) + "?limit=2&continue=" + token);
  ASSERT_EQ(rest["items"].size(), 1u);
  EXPECT_EQ(rest["items"][0]["metadata"]["name"], "c");
  EXPECT_FALSE(rest["metadata"].contains("continue"));
}

TEST_F(ApiServerTest, table_output_has_name_and_age_for_builtins) {
  call_json("POST", kCms, configmap("t", "web"), 201);
  Reply r = call("GET", kCms, "", "application/json",
                 "application/json;as=Table;v=v1;g=meta.k8s.io,application/json");
  ASSERT_EQ(r.status, 200);
  json table = json::parse(r.body);
  EXPECT_EQ(table["kind"], "Table");
  EXPECT_EQ(table["columnDefinitions"][0]["name"], "Name");
  EXPECT_EQ(table["columnDefinitions"][1]["name"], "Age");
  EXPECT_EQ(table["rows"][0]["cells"][0], "t");
  EXPECT_EQ(table["rows"][0]["object"]["kind"], "PartialObjectMetadata");
}

TEST_F(ApiServerTest, watch_replays_from_a_kept_version_and_filters_by_label) {
  const std::string rv = call_json("GET", kCms)["metadata"]["resourceVersion"].get<std::string>();
  call_json("POST", kCms, configmap("w1", "web"), 201);
  call_json("POST", kCms, configmap("w2", "db"), 201);
  call_json("PATCH", std::string(kCms) + "/w1", {{"data", {{"k", "2"}}}}, 200,
            "application/merge-patch+json");
  auto events = watch_events(std::string(kCms) + "?watch=1&resourceVersion=" + rv +
                             "&labelSelector=tier%3Dweb&timeoutSeconds=1");
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0]["type"], "ADDED");
  EXPECT_EQ(events[1]["type"], "MODIFIED");
  EXPECT_EQ(events[1]["object"]["data"]["k"], "2");
}

TEST_F(ApiServerTest, bad_input_never_gets_a_500) {
  call_json("POST", kCms, configmap("ok", "x"), 201);
  struct Case {
    std::string name, method, target, body, content_type;
    int want;
  };
  const std::string item = std::string(kCms) + "/ok";
  const std::vector<Case> cases = {
      {"array_body", "POST", kCms, "[1,2]", "application/json", 400},
      {"name_of_wrong_type", "POST", kCms, R"({"metadata":{"name":5}})", "application/json", 400},
      {"put_of_wrong_type", "PUT", item, R"({"metadata":{"resourceVersion":7}})",
       "application/json", 400},
      {"merge_patch_not_object", "PATCH", item, "[]", "application/merge-patch+json", 400},
      {"json_patch_not_array", "PATCH", item, "{}", "application/json-patch+json", 400},
      {"unknown_patch_type", "PATCH", item, "{}", "text/plain", 415},
      {"bad_limit", "GET", std::string(kCms) + "?limit=abc", "", "application/json", 400},
      {"bad_continue", "GET", std::string(kCms) + "?limit=1&continue=zz", "", "application/json",
       400},
      {"bad_watch_version", "GET", std::string(kCms) + "?watch=1&resourceVersion=x", "",
       "application/json", 400},
      {"too_deep", "GET", item + "/status/x", "", "application/json", 404},
      {"unknown_resource", "GET", "/api/v1/nothings", "", "application/json", 404},
      {"unknown_subresource", "GET", item + "/exec", "", "application/json", 404},
      {"post_to_item", "POST", item, "{}", "application/json", 405},
      {"name_mismatch", "PUT", item, R"({"metadata":{"name":"other"}})", "application/json", 400},
      {"cluster_path_for_namespaced_item", "GET", "/api/v1/configmaps/ok", "", "application/json",
       404},
  };
  for (const auto& c : cases) {
    Reply r = call(c.method, c.target, c.body, c.content_type);
    EXPECT_EQ(r.status, c.want) << c.name << ": " << r.body;
    EXPECT_EQ(json::parse(r.body)["kind"], "Status") << c.name;
  }
}

TEST_F(ApiServerTest, watch_framing_matches_the_recorded_apiserver_stream) {
  call_json("POST", kCms, configmap("f", "x"), 201);
  Client watcher(api_.port(), api_.pki_dir() + "/ca.crt");
  ASSERT_EQ(watcher.connect(), "");
  watcher.write_raw(std::string("GET ") + kCms +
                    "?watch=1&timeoutSeconds=1 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " +
                    api_.token() + "\r\n\r\n");
  const std::string raw = watcher.read_raw_until_closed(std::chrono::milliseconds(5000));
  // As in fixtures/k8s/watch-list/client-go-golden/responses/events.http.
  EXPECT_NE(raw.find("Content-Type: application/json\r\n"), std::string::npos) << raw;
  EXPECT_NE(raw.find("Transfer-Encoding: chunked\r\n"), std::string::npos) << raw;
  EXPECT_NE(raw.find("Cache-Control: no-cache, private\r\n"), std::string::npos) << raw;
  const size_t body = raw.find("\r\n\r\n") + 4;
  const size_t size_end = raw.find("\r\n", body);
  const size_t chunk_size = std::stoul(raw.substr(body, size_end - body), nullptr, 16);
  const std::string chunk = raw.substr(size_end + 2, chunk_size);
  EXPECT_EQ(chunk.rfind(R"({"type":"ADDED","object":{)", 0), 0u) << chunk;
  EXPECT_EQ(chunk.back(), '\n');
  EXPECT_EQ(json::parse(chunk)["object"]["metadata"]["name"], "f");
  EXPECT_NE(raw.find("\r\n0\r\n\r\n"), std::string::npos);  // ended by timeoutSeconds
}

TEST(ApiServerHistory, watch_from_a_compacted_version_gets_a_410_error_event) {
  ApiServerOptions options;
  options.history_limit = 2;
  ApiServer api(options);
  api.start();
  Client c(api.port(), api.pki_dir() + "/ca.crt");
  ASSERT_EQ(c.connect(), "");
  const std::vector<std::pair<std::string, std::string>> auth = {
      {"Authorization", "Bearer " + api.token()}, {"Content-Type", "application/json"}};
  for (const char* n : {"a", "b", "c", "d"})
    ASSERT_EQ(c.request("POST", kCms, configmap(n, "x").dump(), auth).status, 201);
  c.write_raw(std::string("GET ") + kCms +
              "?watch=1&resourceVersion=1 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " +
              api.token() + "\r\n\r\n");
  const std::string raw = c.read_raw_until_closed(std::chrono::milliseconds(5000));
  EXPECT_NE(raw.find(R"("type":"ERROR")"), std::string::npos) << raw;
  EXPECT_NE(raw.find(R"("code":410)"), std::string::npos) << raw;
  EXPECT_NE(raw.find(R"("reason":"Expired")"), std::string::npos) << raw;
}

// kubectl describe lists core/v1 Events by involvedObject; a controller records through
// events.k8s.io/v1 (one storage upstream, so both show).
TEST_F(ApiServerTest, events_k8s_io_events_show_in_core_event_lists) {
  const json event = {{"apiVersion", "events.k8s.io/v1"},
                      {"kind", "Event"},
                      {"metadata", {{"name", "bert.1"}}},
                      {"eventTime", "2026-12-02T01:00:00.000000Z"},
                      {"reportingController", "commgate.io/operator"},
                      {"reportingInstance", "op-0"},
                      {"action", "Decide"},
                      {"reason", "Downsized"},
                      {"type", "Normal"},
                      {"note", "4 -> 2 nodes"},
                      {"regarding", {{"kind", "TrainingJob"}, {"name", "bert"}}}};
  call_json("POST", "/apis/events.k8s.io/v1/namespaces/default/events", event, 201);
  const json list =
      call_json("GET",
                "/api/v1/namespaces/default/events?fieldSelector=involvedObject.kind%3DTrainingJob,"
                "involvedObject.name%3Dbert");
  EXPECT_EQ(list["kind"], "EventList");
  ASSERT_EQ(list["items"].size(), 1u) << list.dump(2);
  EXPECT_EQ(list["items"][0]["message"], "4 -> 2 nodes");
  EXPECT_EQ(list["items"][0]["reportingComponent"], "commgate.io/operator");
  EXPECT_EQ(call_json("GET", "/api/v1/events?fieldSelector=involvedObject.name%3Dgpt")["items"],
            json::array());
}

TEST_F(ApiServerTest, protobuf_bodies_are_refused_with_415) {
  Reply r = call("POST", kCms, std::string("k8s\0", 4), "application/vnd.kubernetes.protobuf");
  EXPECT_EQ(r.status, 415);
  EXPECT_EQ(json::parse(r.body)["reason"], "UnsupportedMediaType");
}

TEST_F(ApiServerTest, crd_resources_come_and_go_in_discovery) {
  json crd = {{"apiVersion", "apiextensions.k8s.io/v1"},
              {"kind", "CustomResourceDefinition"},
              {"metadata", {{"name", "widgets.example.io"}}},
              {"spec",
               {{"group", "example.io"},
                {"scope", "Cluster"},
                {"names", {{"plural", "widgets"}, {"kind", "Widget"}, {"shortNames", {"wd"}}}},
                {"versions",
                 {{{"name", "v1"},
                   {"served", true},
                   {"storage", true},
                   {"subresources", {{"status", json::object()}}}}}}}}};
  call_json("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd, 201);
  json list = call_json("GET", "/apis/example.io/v1");
  EXPECT_EQ(list["resources"][0]["name"], "widgets");
  EXPECT_EQ(list["resources"][0]["namespaced"], false);
  EXPECT_EQ(list["resources"][0]["shortNames"], json::array({"wd"}));
  EXPECT_EQ(list["resources"][1]["name"], "widgets/status");
  call_json("POST", "/apis/example.io/v1/widgets", {{"metadata", {{"name", "w"}}}}, 201);
  // Custom resources have no strategic-merge schema: upstream answers 415.
  const Reply strategic = call("PATCH", "/apis/example.io/v1/widgets/w", R"({"a":1})",
                               "application/strategic-merge-patch+json");
  EXPECT_EQ(strategic.status, 415);
  EXPECT_NE(strategic.body.find("application/apply-patch+yaml"), std::string::npos);
  call_json("DELETE", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.io");
  call_json("GET", "/apis/example.io/v1", nullptr, 404);
  call_json("GET", "/apis/example.io/v1/widgets/w", nullptr, 404);
}

TEST(ApiServerBookmarks, watches_that_allow_bookmarks_get_them) {
  ApiServerOptions options;
  options.bookmark_interval = std::chrono::milliseconds(50);
  options.tick_interval = std::chrono::milliseconds(10);
  ApiServer api(options);
  api.start();
  Client c(api.port(), api.pki_dir() + "/ca.crt");
  ASSERT_EQ(c.connect(), "");
  c.write_raw(std::string("GET ") + kCms +
              "?watch=1&allowWatchBookmarks=true&timeoutSeconds=1 HTTP/1.1\r\nHost: "
              "x\r\nAuthorization: Bearer " +
              api.token() + "\r\n\r\n");
  const std::string raw = c.read_raw_until_closed(std::chrono::milliseconds(5000));
  const std::string want = R"({"type":"BOOKMARK","object":{"apiVersion":"v1","kind":"ConfigMap",)"
                           R"("metadata":{"resourceVersion":")" +
                           std::to_string(api.store().resource_version()) + R"("}}})";
  EXPECT_NE(raw.find(want), std::string::npos) << raw;
  EXPECT_EQ(api.open_watches(), 0u);  // ended by timeoutSeconds
}

// GET /sim/requests: the API requests served so far (a benchmark's requests per job), not
// counting /sim/ requests; the admin's token only.
TEST_F(ApiServerTest, sim_requests_counts_the_api_requests_served) {
  auto served = [&] {
    const Reply r = call("GET", "/sim/requests");
    EXPECT_EQ(r.status, 200) << r.body;
    return json::parse(r.body)["apiRequests"].get<uint64_t>();
  };
  const uint64_t before = served();
  call("GET", "/api/v1/namespaces");
  call("GET", "/api/v1/namespaces/default/configmaps/missing");
  EXPECT_EQ(served(), before + 2);
  EXPECT_EQ(api_.api_requests(), before + 2);
  EXPECT_EQ(
      client_->request("GET", "/sim/requests", "", {{"Authorization", "Bearer wrong"}}).status,
      401);
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::sim
