#include "sim/discovery.h"

namespace commgate::sim {
namespace {

using nlohmann::json;

json resource_entry(const ResourceInfo& r) {
  json e = {{"name", r.plural},
            {"singularName", r.singular},
            {"namespaced", r.namespaced},
            {"kind", r.kind},
            {"verbs", r.verbs}};
  if (!r.short_names.empty()) e["shortNames"] = r.short_names;
  if (!r.categories.empty()) e["categories"] = r.categories;
  return e;
}

std::string path_prefix(const std::string& group, const std::string& version) {
  return group.empty() ? "/api/" + version : "/apis/" + group + "/" + version;
}

}  // namespace

json version_document() {
  return {{"major", "1"},
          {"minor", "32"},
          {"gitVersion", "v1.32.0-commgate-sim"},
          {"gitCommit", "0000000000000000000000000000000000000000"},
          {"gitTreeState", "clean"},
          {"buildDate", "2026-01-01T00:00:00Z"},
          {"goVersion", "go1.23.0"},
          {"compiler", "gc"},
          {"platform", "linux/amd64"}};
}

json core_versions_document(const std::string& server_address) {
  return {{"kind", "APIVersions"},
          {"versions", {"v1"}},
          {"serverAddressByClientCIDRs",
           {{{"clientCIDR", "0.0.0.0/0"}, {"serverAddress", server_address}}}}};
}

json group_list_document(const ResourceRegistry& registry) {
  json groups = json::array();
  for (const auto& [name, versions] : registry.groups()) {
    json vs = json::array();
    for (const auto& v : versions) vs.push_back({{"groupVersion", name + "/" + v}, {"version", v}});
    groups.push_back({{"name", name}, {"versions", vs}, {"preferredVersion", vs[0]}});
  }
  return {{"kind", "APIGroupList"}, {"apiVersion", "v1"}, {"groups", groups}};
}

json resource_list_document(const ResourceRegistry& registry, const std::string& group,
                            const std::string& version) {
  const auto resources = registry.in_group_version(group, version);
  if (resources.empty()) return nullptr;
  json list = json::array();
  for (const auto& r : resources) {
    list.push_back(resource_entry(r));
    if (r.status_subresource)
      list.push_back({{"name", r.plural + "/status"},
                      {"singularName", ""},
                      {"namespaced", r.namespaced},
                      {"kind", r.kind},
                      {"verbs", {"get", "patch", "update"}}});
    if (r.scale)
      list.push_back({{"name", r.plural + "/scale"},
                      {"singularName", ""},
                      {"namespaced", r.namespaced},
                      {"group", "autoscaling"},
                      {"version", "v1"},
                      {"kind", "Scale"},
                      {"verbs", {"get", "patch", "update"}}});
  }
  return {{"kind", "APIResourceList"},
          {"apiVersion", "v1"},
          {"groupVersion", group.empty() ? version : group + "/" + version},
          {"resources", list}};
}

json openapi_v3_root(const ResourceRegistry& registry) {
  json paths = json::object();
  paths["api/v1"] = {{"serverRelativeURL", "/openapi/v3/api/v1"}};
  for (const auto& [name, versions] : registry.groups())
    for (const auto& v : versions) {
      const std::string key = "apis/" + name + "/" + v;
      paths[key] = {{"serverRelativeURL", "/openapi/v3/" + key}};
    }
  return {{"paths", paths}};
}

json openapi_v3_group_version(const ResourceRegistry& registry, const std::string& group,
                              const std::string& version) {
  const auto resources = registry.in_group_version(group, version);
  if (resources.empty()) return nullptr;
  json paths = json::object();
  for (const auto& r : resources) {
    const std::string base = path_prefix(group, version) +
                             (r.namespaced ? "/namespaces/{namespace}/" : "/") + r.plural +
                             "/{name}";
    json gvk = {{"group", group}, {"version", version}, {"kind", r.kind}};
    json params = json::array();
    for (const char* p : {"dryRun", "fieldManager", "fieldValidation", "force"})
      params.push_back({{"name", p}, {"in", "query"}, {"schema", {{"type", "string"}}}});
    json patch = {{"operationId", "patch" + r.kind},
                  {"x-kubernetes-action", "patch"},
                  {"x-kubernetes-group-version-kind", gvk},
                  {"parameters", params},
                  {"responses", {{"200", {{"description", "OK"}}}}}};
    paths[base] = {{"patch", patch}};
  }
  return {{"openapi", "3.0.0"},
          {"info", {{"title", "Kubernetes"}, {"version", "v1.32.0-commgate-sim"}}},
          {"paths", paths},
          {"components", {{"schemas", json::object()}}}};
}

}  // namespace commgate::sim
