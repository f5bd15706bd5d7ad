#include "tests/webhook/webhook_test_support.h"

#include <fstream>
#include <sstream>
#include <stdexcept>

#include "core/comm_profile.h"
#include "tests/support/builders.h"

namespace commgate::webhook::testing {

ReviewBuilder::ReviewBuilder(const std::string& fixture) {
  const std::string path = std::string(COMMGATE_WEBHOOK_TESTDATA) + "/" + fixture + ".json";
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::stringstream text;
  text << in.rdbuf();
  doc_ = nlohmann::json::parse(text.str());
  resource("trainingjobs");
  kind("TrainingJob");
}
ReviewBuilder& ReviewBuilder::operation(const std::string& op) {
  return set("/request/operation", op);
}
ReviewBuilder& ReviewBuilder::object(nlohmann::json o) {
  if (o.is_object() && o.contains("metadata")) {
    set("/request/name", o["metadata"].value("name", ""));
    set("/request/namespace", o["metadata"].value("namespace", ""));
  }
  return set("/request/object", std::move(o));
}
ReviewBuilder& ReviewBuilder::old_object(nlohmann::json o) {
  return set("/request/oldObject", std::move(o));
}
ReviewBuilder& ReviewBuilder::user(const std::string& name) {
  return set("/request/userInfo/username", name);
}
ReviewBuilder& ReviewBuilder::group(const std::string& g) {
  doc_["request"]["userInfo"]["groups"].push_back(g);
  return *this;
}
ReviewBuilder& ReviewBuilder::resource(const std::string& r, const std::string& sub) {
  set("/request/resource", {{"group", "commgate.io"}, {"version", "v1alpha1"}, {"resource", r}});
  if (sub.empty()) {
    doc_["request"].erase("subResource");
  } else {
    set("/request/subResource", sub);
  }
  return *this;
}
ReviewBuilder& ReviewBuilder::kind(const std::string& k) {
  const std::string group = k == "Scale" ? "autoscaling" : "commgate.io";
  const std::string version = k == "Scale" ? "v1" : "v1alpha1";
  return set("/request/kind", {{"group", group}, {"version", version}, {"kind", k}});
}
ReviewBuilder& ReviewBuilder::dry_run(bool d) {
  return set("/request/dryRun", d);
}
ReviewBuilder& ReviewBuilder::set(const std::string& pointer, nlohmann::json value) {
  doc_[nlohmann::json::json_pointer(pointer)] = std::move(value);
  return *this;
}

ReviewBuilder a_create_of(const nlohmann::json& job) {
  ReviewBuilder b("request-v1-create-pod-minikube-user");
  b.object(job);
  return b;
}
ReviewBuilder an_update_of(const nlohmann::json& old_job, const nlohmann::json& new_job) {
  ReviewBuilder b("request-v1-update-clusterscoped-cr-serviceaccount");
  b.object(new_job).old_object(old_job);
  return b;
}
ReviewBuilder a_delete_of(const nlohmann::json& old_job) {
  ReviewBuilder b("request-v1-delete-pod-by-node");
  b.old_object(old_job).set("/request/object", nullptr);
  return b;
}

nlohmann::json a_profile(double busbw_gbps, TimePoint at, const std::string& name) {
  return {{"apiVersion", "commgate.io/v1alpha1"},
          {"kind", "CommProfile"},
          {"metadata", {{"name", name}}},
          {"spec", nlohmann::json::object()},
          {"status",
           {{"backend", "gloo"},
            {"transport", "socket"},
            {"link",
             {{"latencyUs", 50},
              {"busbwGBps", busbw_gbps},
              {"nodesProbed", 2},
              {"measuredAt", format_rfc3339(at)}}}}}};
}

Snapshot snapshot_of(std::vector<CommPolicy> policies, std::vector<nlohmann::json> profiles) {
  Snapshot s;
  s.policies = std::move(policies);
  for (const auto& p : profiles) {
    CommProfile parsed = parse_comm_profile(p, commgate::testing::test_now());
    s.profiles[parsed.metadata.name] = parsed;
  }
  return s;
}

nlohmann::json apply_patch(const nlohmann::json& object, const AdmissionResponse& response) {
  nlohmann::json ops = nlohmann::json::array();
  for (const auto& op : response.patch) {
    nlohmann::json j = {{"op", op.op}, {"path", op.path}};
    if (op.op != "remove") j["value"] = op.value;
    ops.push_back(j);
  }
  return object.patch(ops);
}

}  // namespace commgate::webhook::testing
