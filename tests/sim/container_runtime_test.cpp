// The kubelet's container mode, its pure part (sim/container_runtime.h): the `podman run`
// arguments a pod's securityContext, volumes and network give, and the pods it refuses.
#include "sim/container_runtime.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "sim/kubelet.h"

namespace commgate::sim {
namespace COMMGATE_TEST_UNIT {

using nlohmann::json;

ContainerLaunch launch_of(const std::string& image_user) {
  ContainerLaunch launch;
  launch.name = "k8s_main_p_ns_u1";
  launch.image = "commgate/commgate:test";
  launch.netns = "cg-n0-p2";
  launch.hostname = "p";
  launch.pod_label = "p_ns(u1)";
  launch.image_user = image_user;
  return launch;
}

bool has(const std::vector<std::string>& args, const std::string& arg) {
  return std::find(args.begin(), args.end(), arg) != args.end();
}

size_t count_prefix(const std::vector<std::string>& args, const std::string& prefix) {
  return static_cast<size_t>(std::count_if(
      args.begin(), args.end(), [&](const std::string& a) { return a.rfind(prefix, 0) == 0; }));
}

TEST(PodmanRunPlan, security_contexts_become_podman_options_or_a_refusal) {
  const json restricted_pod = {{"runAsNonRoot", true},
                               {"runAsUser", 65532},
                               {"runAsGroup", 65532},
                               {"fsGroup", 65532},
                               {"seccompProfile", {{"type", "RuntimeDefault"}}}};
  const json restricted_container = {{"allowPrivilegeEscalation", false},
                                     {"readOnlyRootFilesystem", true},
                                     {"runAsNonRoot", true},
                                     {"capabilities", {{"drop", {"ALL"}}}},
                                     {"seccompProfile", {{"type", "RuntimeDefault"}}}};
  struct Case {
    std::string name;
    json pod_security, container_security;
    std::string image_user;
    std::vector<std::string> present, absent;
    size_t cap_adds = 0;
    std::string refusal;  // a part of it; "" = runs
  };
  const std::vector<Case> cases = {
      {"the chart's restricted pods",
       restricted_pod,
       restricted_container,
       "65532:65532",
       {"--user=65532:65532", "--group-add=65532", "--cap-drop=ALL",
        "--security-opt=no-new-privileges", "--read-only", "--read-only-tmpfs=false"},
       {"--security-opt=seccomp=unconfined", "--privileged"},
       0,
       ""},
      {"no securityContext: containerd's default capabilities, Unconfined seccomp, image's user",
       json::object(),
       json::object(),
       "",
       {"--cap-drop=ALL", "--cap-add=NET_RAW", "--cap-add=AUDIT_WRITE",
        "--security-opt=seccomp=unconfined"},
       {"--read-only", "--security-opt=no-new-privileges"},
       kRuntimeDefaultCapabilities.size(),
       ""},
      {"drop one, add one (CAP_ prefix and case as users write them)",
       json::object(),
       {{"capabilities", {{"drop", {"NET_RAW"}}, {"add", {"cap_sys_ptrace"}}}}},
       "",
       {"--cap-add=SYS_PTRACE"},
       {"--cap-add=NET_RAW"},
       kRuntimeDefaultCapabilities.size(),
       ""},
      {"the container's runAsUser over the pod's",
       {{"runAsUser", 1000}},
       {{"runAsUser", 2000}},
       "",
       {"--user=2000"},
       {"--user=1000"},
       kRuntimeDefaultCapabilities.size(),
       ""},
      {"runAsGroup alone keeps the image's user",
       {{"runAsGroup", 3000}},
       json::object(),
       "65532:65532",
       {"--user=65532:3000"},
       {},
       kRuntimeDefaultCapabilities.size(),
       ""},
      {"privileged: every capability, no other capability flag",
       json::object(),
       {{"privileged", true}, {"capabilities", {{"drop", {"ALL"}}}}},
       "",
       {"--privileged"},
       {"--cap-drop=ALL"},
       0,
       ""},
      {"runAsNonRoot with an image that runs as root",
       {{"runAsNonRoot", true}},
       json::object(),
       "",
       {},
       {},
       0,
       "container has runAsNonRoot and image will run as root (pod: \"p_ns(u1)\", container: "
       "main)"},
      {"runAsNonRoot with an image of USER 0",
       {{"runAsNonRoot", true}},
       json::object(),
       "0:0",
       {},
       {},
       0,
       "image will run as root"},
      {"runAsNonRoot with runAsUser 0",
       json::object(),
       {{"runAsNonRoot", true}, {"runAsUser", 0}},
       "65532",
       {},
       {},
       0,
       "container's runAsUser breaks non-root policy (pod: \"p_ns(u1)\", container: main)"},
      {"runAsNonRoot with a user name the kubelet cannot check",
       {{"runAsNonRoot", true}},
       json::object(),
       "nobody",
       {},
       {},
       0,
       "image has non-numeric user (nobody), cannot verify user is non-root"},
      {"runAsNonRoot false at the container over the pod's true",
       {{"runAsNonRoot", true}},
       {{"runAsNonRoot", false}},
       "",
       {"--cap-drop=ALL"},
       {},
       kRuntimeDefaultCapabilities.size(),
       ""},
      {"a Localhost seccomp profile",
       json::object(),
       {{"seccompProfile", {{"type", "Localhost"}, {"localhostProfile", "my.json"}}}},
       "",
       {},
       {},
       0,
       "seccompProfile of type Localhost (my.json) for container main"},
      {"a Localhost AppArmor profile at the pod",
       {{"appArmorProfile", {{"type", "Localhost"}, {"localhostProfile", "k8s-x"}}}},
       json::object(),
       "",
       {},
       {},
       0,
       "appArmorProfile of type Localhost (k8s-x)"},
      {"SELinux options",
       {{"seLinuxOptions", {{"level", "s0:c1"}}}},
       json::object(),
       "",
       {},
       {},
       0,
       "seLinuxOptions for container main: the simulated nodes have no SELinux"},
      {"an unmasked /proc",
       json::object(),
       {{"procMount", "Unmasked"}},
       "",
       {},
       {},
       0,
       "procMount Unmasked"},
      {"sysctls and supplementalGroups",
       {{"sysctls", {{{"name", "net.core.somaxconn"}, {"value", "1024"}}}},
        {"supplementalGroups", {5, 6}}},
       json::object(),
       "",
       {"--sysctl=net.core.somaxconn=1024", "--group-add=5", "--group-add=6"},
       {},
       kRuntimeDefaultCapabilities.size(),
       ""},
  };
  for (const auto& c : cases) {
    json pod = {{"containers", json::array()}};
    if (!c.pod_security.empty()) pod["securityContext"] = c.pod_security;
    json container = {{"name", "main"}, {"image", "commgate/commgate:test"}};
    if (!c.container_security.empty()) container["securityContext"] = c.container_security;
    const ContainerRunPlan plan = podman_run_plan(pod, container, launch_of(c.image_user));
    if (!c.refusal.empty()) {
      EXPECT_NE(plan.refusal.find(c.refusal), std::string::npos) << c.name << ": " << plan.refusal;
      EXPECT_TRUE(plan.args.empty()) << c.name;
      continue;
    }
    EXPECT_EQ(plan.refusal, "") << c.name;
    for (const auto& arg : c.present) EXPECT_TRUE(has(plan.args, arg)) << c.name << ": " << arg;
    for (const auto& arg : c.absent) EXPECT_FALSE(has(plan.args, arg)) << c.name << ": " << arg;
    EXPECT_EQ(count_prefix(plan.args, "--cap-add="), c.cap_adds) << c.name;
  }
}

TEST(PodmanRunPlan, command_args_env_mounts_and_network_as_a_runtime_gives_them) {
  const json pod = {{"hostPID", true}};
  const json container = {
      {"name", "main"}, {"image", "commgate/commgate:test"}, {"workingDir", "/work"}};
  ContainerLaunch launch = launch_of("65532:65532");
  launch.command = {"/usr/local/bin/commgate", "webhook"};
  launch.args = {"--port", "8443"};
  launch.env = {{"A", "1"}, {"B", "x=y"}};
  launch.mounts = {{"/pods/p/volumes/tls", "/etc/commgate/tls", true},
                   {"/pods/p/termination-log-main", "/dev/termination-log", false},
                   {"/pods/p/etc-hosts", "/etc/hosts", false}};
  launch.run_options = {"--ulimit", "nofile=4096:4096"};
  launch.owner_label = "io.commgate.sim-owner-pid=42";
  const auto plan = podman_run_plan(pod, container, launch);
  ASSERT_EQ(plan.refusal, "");
  const auto& a = plan.args;
  ASSERT_GE(a.size(), 4u);
  EXPECT_EQ(std::vector<std::string>(a.begin(), a.begin() + 3),
            (std::vector<std::string>{"run", "--rm", "--pull=never"}));
  for (const char* arg :
       {"--name=k8s_main_p_ns_u1", "--network=ns:/run/netns/cg-n0-p2", "--hostname=p", "--pid=host",
        "--workdir=/work", "--env=A=1", "--env=B=x=y", "nofile=4096:4096",
        "--mount=type=bind,source=/pods/p/volumes/tls,destination=/etc/commgate/tls,ro=true",
        "--mount=type=bind,source=/pods/p/termination-log-main,destination=/dev/termination-log",
        "--no-hosts",                               // the kubelet's /etc/hosts, not podman's
        "--unsetenv=TERM", "--unsetenv=container",  // podman's own env, not a CRI runtime's
        "--label=io.commgate.sim-owner-pid=42",
        "--entrypoint=[\"/usr/local/bin/commgate\",\"webhook\"]"})
    EXPECT_TRUE(has(a, arg)) << arg;
  // The image, then the args: nothing of podman's after the image.
  EXPECT_EQ(std::vector<std::string>(a.end() - 3, a.end()),
            (std::vector<std::string>{"commgate/commgate:test", "--port", "8443"}));

  launch.netns = "";
  launch.command.clear();
  launch.mounts.pop_back();
  const auto host = podman_run_plan(json::object(), container, launch);
  EXPECT_TRUE(has(host.args, "--network=host"));
  EXPECT_EQ(count_prefix(host.args, "--entrypoint"), 0u);  // the image's ENTRYPOINT
  EXPECT_FALSE(has(host.args, "--pid=host"));
  EXPECT_FALSE(has(host.args, "--no-hosts"));
}

TEST(VolumeFileModes, an_items_mode_over_the_default_mode_over_0644) {
  const std::map<std::string, std::string> files = {{"tls.crt", ""}, {"tls.key", ""}, {"ca", ""}};
  const json secret = {{"name", "tls"},
                       {"secret",
                        {{"secretName", "s"},
                         {"defaultMode", 0440},
                         {"items", {{{"key", "k"}, {"path", "tls.key"}, {"mode", 0400}}}}}}};
  EXPECT_EQ(volume_file_modes(secret, files),
            (std::map<std::string, int>{{"tls.crt", 0440}, {"tls.key", 0400}, {"ca", 0440}}));
  const json plain = {{"name", "c"}, {"configMap", {{"name", "c"}}}};
  EXPECT_EQ(volume_file_modes(plain, {{"a", ""}}), (std::map<std::string, int>{{"a", 0644}}));
  const json projected = {
      {"name", "p"},
      {"projected",
       {{"defaultMode", 0600},
        {"sources",
         {{{"serviceAccountToken", {{"path", "token"}}}},
          {{"configMap",
            {{"name", "c"}, {"items", {{{"key", "x"}, {"path", "x"}, {"mode", 0444}}}}}}}}}}}};
  EXPECT_EQ(volume_file_modes(projected, {{"token", ""}, {"x", ""}}),
            (std::map<std::string, int>{{"token", 0600}, {"x", 0444}}));
  EXPECT_TRUE(is_api_data_volume(secret));
  EXPECT_TRUE(is_api_data_volume(projected));
  EXPECT_FALSE(is_api_data_volume({{"name", "scratch"}, {"emptyDir", json::object()}}));
  EXPECT_FALSE(is_api_data_volume({{"name", "h"}, {"hostPath", {{"path", "/"}}}}));
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::sim
