#include "tests/chart/chart_sim_fixture.h"

#include <fstream>
#include <utility>

#include "core/base64.h"

namespace commgate::testing {

namespace fs = std::filesystem;
using nlohmann::json;

sim::ApiServerOptions chart_sim_options() {
  sim::ApiServerOptions options;
  options.authorization = sim::AuthorizationMode::kRbac;
  options.users = {sim::parse_user_flag(std::string("operator-sa-token=") + kOperatorUser),
                   sim::parse_user_flag(std::string("webhook-sa-token=") + kWebhookUser)};
  return options;
}

json labelled_namespace(const std::string& name) {
  return {{"apiVersion", "v1"},
          {"kind", "Namespace"},
          {"metadata", {{"name", name}, {"labels", {{"kubernetes.io/metadata.name", name}}}}}};
}

std::string manifest_stream(const std::vector<json>& objects) {
  std::string out;
  for (const auto& o : objects) out += "---\n" + o.dump(2) + "\n";
  return out;
}

KubectlResult apply_objects(Kubectl& kubectl, const fs::path& dir, const std::vector<json>& objects,
                            const std::string& name) {
  const fs::path file = dir / (name + ".yaml");
  std::ofstream(file) << manifest_stream(objects);
  return kubectl.run({"apply", "-f", file.string()});
}

ChartSimTest::ChartSimTest(sim::ApiServerOptions options) : api_(std::move(options)) {}

void ChartSimTest::create_kueue_crds() {
  const fs::path fixtures =
      fs::path(COMMGATE_SOURCE_DIR) / "../shared/fixtures/ecosystem/kueue-v0.19.2";
  for (const char* crd :
       {"kueue.x-k8s.io_resourceflavors.yaml", "kueue.x-k8s.io_admissionchecks.yaml",
        "kueue.x-k8s.io_clusterqueues.yaml", "kueue.x-k8s.io_localqueues.yaml",
        "kueue.x-k8s.io_workloads.yaml"}) {
    const auto r = kubectl({"create", "-f", (fixtures / crd).string()});
    ASSERT_EQ(r.code, 0) << crd << ": " << r.output;
  }
}

void ChartSimTest::start_sim(std::chrono::milliseconds kubectl_timeout) {
  api_.start();
  dir_ = api_.pki_dir();
  kubectl_ = Kubectl::with_kubeconfig(COMMGATE_KUBECTL, dir_, api_.kubeconfig(), kubectl_timeout);
}

void ChartSimTest::render(const std::vector<std::string>& args) {
  chart_ = render_chart(args);
  ASSERT_EQ(chart_.exit_code, 0) << chart_.output;
}

std::string ChartSimTest::kubeconfig_of(const std::string& username) {
  const std::string file = dir_ + "/" + username.substr(username.rfind(':') + 1) + ".kubeconfig";
  std::ofstream(file) << api_.kubeconfig_for(username);
  return file;
}

fs::path ChartSimTest::mount_secret(const std::string& name) const {
  const json& secret = chart_.get("Secret", name);
  const fs::path dir = fs::path(dir_) / name;
  fs::create_directories(dir);
  for (const auto& [key, value] : secret["data"].items())
    std::ofstream(dir / key) << base64_decode(value.get<std::string>());
  return dir;
}

std::vector<std::string> ChartSimTest::local_argv(const json& container, const fs::path& tls_dir,
                                                  const std::string& kubeconfig) const {
  std::vector<std::string> argv = {COMMGATE_BINARY};
  for (const auto& a : container["args"]) {
    std::string arg = a;
    if (arg.rfind("--port=", 0) == 0) arg = "--port=0";
    const std::string mount = "/etc/commgate/tls/";
    if (auto at = arg.find(mount); at != std::string::npos)
      arg.replace(at, mount.size(), tls_dir.string() + "/");
    const std::string key_mount = "/etc/commgate/decision-key/";
    if (auto at = arg.find(key_mount); at != std::string::npos)
      arg.replace(at, key_mount.size(), mount_secret("commgate-decision-key").string() + "/");
    argv.push_back(arg);
  }
  argv.insert(argv.end(), {"--address", "127.0.0.1", "--kubeconfig", kubeconfig});
  return argv;
}

}  // namespace commgate::testing
