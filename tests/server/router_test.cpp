#include "server/router.h"

#include <gtest/gtest.h>

namespace commgate::server {
namespace COMMGATE_TEST_UNIT {

Request req(std::string method, std::string path) {
  Request r;
  r.method = std::move(method);
  r.path = path;
  r.target = std::move(path);
  return r;
}

Handler says(std::string what) {
  return [what](const Request&) { return Response::text(200, what); };
}

TEST(Router, exact_route_beats_prefix_and_longest_prefix_wins) {
  Router r;
  r.get("/apis/*", says("apis"))
      .get("/apis/commgate.io/*", says("ours"))
      .get("/apis", says("exact"));
  EXPECT_EQ(r.dispatch(req("GET", "/apis")).body, "exact");
  EXPECT_EQ(r.dispatch(req("GET", "/apis/batch/v1")).body, "apis");
  EXPECT_EQ(r.dispatch(req("GET", "/apis/commgate.io/v1alpha1/trainingjobs")).body, "ours");
  EXPECT_EQ(r.dispatch(req("GET", "/apisx")).status, 404);
}

TEST(Router, unknown_path_is_404) {
  Router r;
  r.get("/healthz", says("ok"));
  EXPECT_EQ(r.dispatch(req("GET", "/nope")).status, 404);
}

TEST(Router, known_path_with_other_method_is_405_with_allow) {
  Router r;
  r.get("/x", says("get")).post("/x", says("post"));
  const Response res = r.dispatch(req("DELETE", "/x"));
  EXPECT_EQ(res.status, 405);
  ASSERT_EQ(res.headers.size(), 1u);
  EXPECT_EQ(res.headers[0].first, "Allow");
  EXPECT_EQ(res.headers[0].second, "GET, HEAD, POST");
}

TEST(Router, head_is_answered_by_the_get_route) {
  Router r;
  r.get("/x", says("get"));
  EXPECT_EQ(r.dispatch(req("HEAD", "/x")).status, 200);
}

TEST(Router, any_method_route_takes_every_method) {
  Router r;
  r.add("*", "/api/*", says("any"));
  EXPECT_EQ(r.dispatch(req("PATCH", "/api/v1/pods")).body, "any");
}

TEST(Router, duplicate_route_is_refused) {
  Router r;
  r.get("/x", says("a"));
  EXPECT_THROW(r.get("/x", says("b")), std::invalid_argument);
  EXPECT_THROW(r.get("relative", says("b")), std::invalid_argument);
}

TEST(Request, header_lookup_is_case_insensitive_and_query_params_are_decoded) {
  Request r;
  r.headers = {{"Content-Type", "application/json"}};
  r.query = "labelSelector=app%3Dweb&watch=1&x=a+b&flag";
  EXPECT_EQ(r.header("content-type"), "application/json");
  EXPECT_EQ(r.header("accept"), "");
  EXPECT_EQ(r.query_param("labelSelector"), "app=web");
  EXPECT_EQ(r.query_param("watch"), "1");
  EXPECT_EQ(r.query_param("x"), "a b");
  EXPECT_EQ(r.query_param("flag"), "");
  EXPECT_EQ(r.query_param("missing"), "");
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::server
