// The simulated API server over real HTTPS, for what the official Python client found it
// answering differently from kube-apiserver (docs/testing.md, "Fidelity checks"): the
// /version/ path, query parameters read as upstream's parameter codec reads them, what a
// DELETE answers, and remainingItemCount on paged lists.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/api_server.h"
#include "tests/server/test_client.h"

namespace commgate::sim {
namespace COMMGATE_TEST_UNIT {

using nlohmann::json;
using server::testing::Client;
using server::testing::Reply;

const std::string kCms = "/api/v1/namespaces/default/configmaps";

struct Case {
  std::string name;
  std::string method;
  std::string target;
  std::string body;
  int want_status;
  std::string want_in_body;
  std::string want_not_in_body = "";
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.name << ": " << c.method << " " << c.target;
}

class ApiQueryTest : public ::testing::Test {
 protected:
  void SetUp() override { api_.start(); }
  // A connection per request: a watch's answer ends its connection.
  Reply call(const std::string& method, const std::string& target, const std::string& body = "") {
    Client client(api_.port(), api_.pki_dir() + "/ca.crt");
    EXPECT_EQ(client.connect(), "");
    return client.request(method, target, body,
                          {{"Authorization", "Bearer " + api_.token()},
                           {"Content-Type", "application/json"},
                           {"Accept", "application/json"}});
  }
  void create(const std::string& collection, const json& object) {
    Reply r = call("POST", collection, object.dump());
    ASSERT_EQ(r.status, 201) << r.body;
  }

  ApiServer api_;
};

// Run in order: the deletes come last. A watch with timeoutSeconds=-1 replays the current
// objects, then ends at the server's next tick.
TEST_F(ApiQueryTest, answers_as_kube_apiserver_does) {
  for (const char* name : {"a", "b", "c"})
    create(kCms, {{"metadata", {{"name", name}, {"labels", {{"tier", "web"}}}}}});
  create("/api/v1/namespaces/default/services",
         {{"metadata", {{"name", "rdzv"}}}, {"spec", {{"ports", {{{"port", 29400}}}}}}});
  const std::vector<Case> cases = {
      {"version_with_a_trailing_slash_as_the_python_client_asks", "GET", "/version/", "", 200,
       R"("gitVersion")"},
      {"python_client_watch_true_streams_events", "GET", kCms + "?watch=True&timeoutSeconds=-1", "",
       200, R"({"type":"ADDED")"},
      {"bare_watch_key_watches", "GET", kCms + "?watch&timeoutSeconds=-1", "", 200,
       R"({"type":"ADDED")"},
      {"any_other_boolean_value_watches_never_400", "GET", kCms + "?watch=yes&timeoutSeconds=-1",
       "", 200, R"({"type":"ADDED")"},
      {"watch_false_in_any_case_lists", "GET", kCms + "?watch=FALSE", "", 200,
       R"("kind":"ConfigMapList")"},
      {"limit_word_is_gos_parse_error", "GET", kCms + "?limit=ten", "", 400,
       R"("message":"strconv.ParseInt: parsing \"ten\": invalid syntax")"},
      {"timeout_out_of_range_on_a_watch", "GET",
       kCms + "?watch=1&timeoutSeconds=9223372036854775808", "", 400,
       R"(parsing \"9223372036854775808\": value out of range)"},
      {"limit_with_an_encoded_plus_sign_pages", "GET", kCms + "?limit=%2B1", "", 200,
       R"("remainingItemCount":2)"},
      {"a_bare_plus_is_a_space_as_go_decodes_it", "GET", kCms + "?limit=+1", "", 400,
       R"(strconv.ParseInt: parsing \" 1\": invalid syntax)"},
      {"negative_limit_is_no_limit", "GET", kCms + "?limit=-1", "", 200, R"("name":"c")",
       "continue"},
      {"no_remaining_count_when_a_selector_filters", "GET",
       kCms + "?limit=1&labelSelector=tier%3Dweb", "", 200, R"("continue")", "remainingItemCount"},
      {"send_initial_events_on_a_list_is_422", "GET", kCms + "?sendInitialEvents=false", "", 422,
       "sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list"},
      {"send_initial_events_false_on_a_watch_needs_not_older_than", "GET",
       kCms + "?watch=1&sendInitialEvents=false", "", 422,
       "resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch "
       "to NotOlderThan"},
      {"get_of_one_object_reads_no_list_options", "GET", kCms + "/a?limit=x", "", 200,
       R"("name":"a")"},
      {"bad_grace_period_without_a_body", "DELETE", kCms + "/a?gracePeriodSeconds=soon", "", 400,
       R"(strconv.ParseInt: parsing \"soon\": invalid syntax)"},
      {"query_ignored_when_delete_options_come_in_the_body", "DELETE",
       kCms + "/a?gracePeriodSeconds=soon&propagationPolicy=Sideways",
       R"({"kind":"DeleteOptions","apiVersion":"v1"})", 200, R"("status":"Success")"},
      {"delete_of_a_config_map_answers_a_success_status", "DELETE", kCms + "/b", "", 200,
       R"("details":{"kind":"configmaps","name":"b","uid":)"},
      {"delete_of_a_service_answers_the_service", "DELETE",
       "/api/v1/namespaces/default/services/rdzv", "", 200, R"("kind":"Service")"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(::testing::PrintToString(c));
    const Reply r = call(c.method, c.target, c.body);
    EXPECT_EQ(r.status, c.want_status) << r.body;
    EXPECT_NE(r.body.find(c.want_in_body), std::string::npos) << r.body;
    if (!c.want_not_in_body.empty()) {
      EXPECT_EQ(r.body.find(c.want_not_in_body), std::string::npos) << r.body;
    }
  }
}

}  // namespace
}  // namespace commgate::sim
