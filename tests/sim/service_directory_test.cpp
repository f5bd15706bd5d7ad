// Service -> endpoint selection (sim/service_directory.h): how the sim reaches a webhook
// through its Service without cluster DNS or kube-proxy.
#include "sim/service_directory.h"

#include <gtest/gtest.h>

#include <set>

#include "sim/object_store.h"

namespace commgate::sim {
namespace COMMGATE_TEST_UNIT {

using nlohmann::json;

json a_pod(const std::string& name, const std::string& app, bool ready, const std::string& ip) {
  return {{"metadata", {{"name", name}, {"labels", {{"app", app}}}}},
          {"spec",
           {{"containers",
             {{{"name", "c"}, {"ports", {{{"name", "https"}, {"containerPort", 9443}}}}}}}}},
          {"status",
           {{"podIP", ip},
            {"conditions", {{{"type", "Ready"}, {"status", ready ? "True" : "False"}}}}}}};
}

json a_service(const json& target) {
  json port = {{"port", 443}};
  if (!target.is_null()) port["targetPort"] = target;
  return {{"metadata", {{"name", "hook"}}},
          {"spec", {{"selector", {{"app", "hook"}}}, {"ports", {port}}}}};
}

TEST(SelectEndpoint, a_ready_selected_pod_at_the_target_port) {
  json deleting = a_pod("a-deleting", "hook", true, "127.0.0.9");
  deleting["metadata"]["deletionTimestamp"] = "2026-12-02T09:00:00Z";
  struct Case {
    const char* name;
    json service;
    std::vector<json> pods;
    uint16_t port;
    std::optional<std::string> want;  // "host:port"
  };
  const Case cases[] = {
      {"a_named_target_port_is_the_pods_container_port",
       a_service("https"),
       {a_pod("b", "hook", true, "127.0.0.2")},
       443,
       "127.0.0.2:9443"},
      {"a_numbered_target_port_is_itself",
       a_service(8443),
       {a_pod("b", "hook", true, "127.0.0.2")},
       443,
       "127.0.0.2:8443"},
      {"no_target_port_is_the_service_port",
       a_service(nullptr),
       {a_pod("b", "hook", true, "127.0.0.2")},
       443,
       "127.0.0.2:443"},
      {"an_unready_pod_is_no_endpoint",
       a_service("https"),
       {a_pod("b", "hook", false, "127.0.0.2")},
       443,
       std::nullopt},
      {"a_deleting_pod_is_no_endpoint", a_service("https"), {deleting}, 443, std::nullopt},
      {"another_apps_pod_is_no_endpoint",
       a_service("https"),
       {a_pod("b", "other", true, "127.0.0.2")},
       443,
       std::nullopt},
      {"the_first_ready_pod_by_name",
       a_service("https"),
       {a_pod("c", "hook", true, "127.0.0.3"), a_pod("a", "hook", false, "127.0.0.1"),
        a_pod("b", "hook", true, "127.0.0.2")},
       443,
       "127.0.0.2:9443"},
      {"a_port_the_service_lacks",
       a_service("https"),
       {a_pod("b", "hook", true, "127.0.0.2")},
       8443,
       std::nullopt},
      {"a_service_without_selector_has_no_endpoints",
       {{"spec", {{"ports", {{{"port", 443}}}}}}},
       {a_pod("b", "hook", true, "127.0.0.2")},
       443,
       std::nullopt},
  };
  for (const auto& c : cases) {
    const auto got = select_endpoint(c.service, c.pods, c.port);
    const std::optional<std::string> text =
        got ? std::optional<std::string>(got->host + ":" + std::to_string(got->port))
            : std::nullopt;
    EXPECT_EQ(text, c.want) << c.name;
  }
}

TEST(ServiceDirectory, a_registration_wins_over_the_store) {
  ServiceDirectory directory;
  EXPECT_FALSE(directory.find("hook", "ns").has_value());
  directory.add("hook", "ns", "127.0.0.1:1234");
  const auto found = directory.find("hook", "ns", 443);
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->port, 1234);
}

// kube-proxy spreads connections over a Service's endpoints: the directory takes the
// Ready pods in turn, so each webhook replica is called; a deleting one no longer is.
TEST(ServiceDirectory, takes_the_ready_endpoints_in_turn) {
  ObjectStore store;
  const auto services = *store.find_resource("", "v1", "services");
  const auto pods = *store.find_resource("", "v1", "pods");
  store.create(*store.find_resource("", "v1", "namespaces"), "", {{"metadata", {{"name", "ns"}}}});
  store.create(services, "ns", a_service("https"));
  for (const auto& [name, ip] : {std::pair{"a", "127.0.0.1"}, std::pair{"b", "127.0.0.2"}}) {
    json pod = a_pod(name, "hook", true, ip);
    pod["metadata"]["finalizers"] = {"test.commgate.io/hold"};  // deleting, not gone
    store.create(pods, "ns", pod);
    store.mutate(pods, "ns", name, WritePart::kStatus, [&](const json& current) {
      json next = current;
      next["status"] = pod["status"];
      return next;
    });
  }
  ServiceDirectory directory(&store);
  std::multiset<std::string> called;
  for (int i = 0; i < 4; ++i) {
    const auto found = directory.find("hook", "ns");
    ASSERT_TRUE(found.has_value());
    EXPECT_EQ(found->port, 9443);
    called.insert(found->pod + "=" + found->host);
  }
  EXPECT_EQ(called, (std::multiset<std::string>{"a=127.0.0.1", "a=127.0.0.1", "b=127.0.0.2",
                                                "b=127.0.0.2"}));
  store.remove(pods, "ns", "a");
  for (int i = 0; i < 2; ++i) EXPECT_EQ(directory.find("hook", "ns")->pod, "b");
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::sim
