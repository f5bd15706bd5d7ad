#include "sim/container_runtime.h"

#include <algorithm>
#include <cctype>

#include "sim/json_fields.h"

namespace commgate::sim {
namespace {

using nlohmann::json;

// The container's securityContext field, else the pod's (the fields both may set).
const json& effective(const json& pod_spec, const json& container, const char* field) {
  const json& own = at(at(container, "securityContext"), field);
  return own.is_null() ? at(at(pod_spec, "securityContext"), field) : own;
}

bool is_true(const json& v) {
  return v.is_boolean() && v.get<bool>();
}

std::string capability_name(std::string name) {
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  if (name.rfind("CAP_", 0) == 0) name.erase(0, 4);
  return name;
}

bool all_digits(const std::string& s) {
  return !s.empty() &&
         std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}

// upstream's verifyRunAsNonRoot (pkg/kubelet/kuberuntime/security_context_others.go), its
// messages word for word: "" when the container may run.
std::string run_as_non_root_violation(const json& pod_spec, const json& container,
                                      const ContainerLaunch& launch) {
  if (!is_true(effective(pod_spec, container, "runAsNonRoot"))) return "";
  const std::string where =
      "(pod: \"" + launch.pod_label + "\", container: " + str(at(container, "name")) + ")";
  const json& user = effective(pod_spec, container, "runAsUser");
  if (user.is_number_integer())
    return user.get<long long>() == 0 ? "container's runAsUser breaks non-root policy " + where
                                      : "";
  const std::string image_uid = launch.image_user.substr(0, launch.image_user.find(':'));
  if (image_uid.empty() || image_uid == "0")
    return "container has runAsNonRoot and image will run as root " + where;
  if (!all_digits(image_uid))
    return "container has runAsNonRoot and image has non-numeric user (" + image_uid +
           "), cannot verify user is non-root " + where;
  return "";
}

// What this mode cannot honour, named by field: "" when nothing.
std::string unsupported(const json& pod_spec, const json& container) {
  const std::string name = str(at(container, "name"));
  for (const char* field : {"seccompProfile", "appArmorProfile"}) {
    const json& profile = effective(pod_spec, container, field);
    if (str(at(profile, "type")) == "Localhost")
      return std::string(field) + " of type Localhost (" + str(at(profile, "localhostProfile")) +
             ") for container " + name +
             ": commgate-sim's container mode runs RuntimeDefault and Unconfined profiles only";
  }
  const json& selinux = effective(pod_spec, container, "seLinuxOptions");
  if (selinux.is_object() && !selinux.empty())
    return "seLinuxOptions for container " + name + ": the simulated nodes have no SELinux";
  if (str(at(at(container, "securityContext"), "procMount")) == "Unmasked")
    return "procMount Unmasked for container " + name +
           ": commgate-sim's container mode runs the runtime's masked /proc only";
  return "";
}

// --user: runAsUser[:runAsGroup]; runAsGroup alone keeps the image's user.
std::string user_option(const json& pod_spec, const json& container,
                        const ContainerLaunch& launch) {
  const json& uid = effective(pod_spec, container, "runAsUser");
  const json& gid = effective(pod_spec, container, "runAsGroup");
  if (!uid.is_number_integer() && !gid.is_number_integer()) return "";
  std::string user;
  if (uid.is_number_integer()) {
    user = std::to_string(uid.get<long long>());
  } else {
    user = launch.image_user.substr(0, launch.image_user.find(':'));
    if (user.empty()) user = "0";
  }
  if (gid.is_number_integer()) user += ":" + std::to_string(gid.get<long long>());
  return user;
}

void add_capabilities(const json& security, std::vector<std::string>& args) {
  const json& caps = at(security, "capabilities");
  std::vector<std::string> drop, add;
  if (at(caps, "drop").is_array())
    for (const auto& c : caps["drop"]) drop.push_back(capability_name(str(c)));
  if (at(caps, "add").is_array())
    for (const auto& c : caps["add"]) add.push_back(capability_name(str(c)));
  args.emplace_back("--cap-drop=ALL");
  if (std::find(add.begin(), add.end(), "ALL") != add.end()) {
    args.emplace_back("--cap-add=ALL");
    return;
  }
  std::vector<std::string> kept;
  if (std::find(drop.begin(), drop.end(), "ALL") == drop.end())
    for (const char* c : kRuntimeDefaultCapabilities)
      if (std::find(drop.begin(), drop.end(), c) == drop.end()) kept.emplace_back(c);
  for (const auto& c : add)
    if (std::find(kept.begin(), kept.end(), c) == kept.end()) kept.push_back(c);
  for (const auto& c : kept) args.push_back("--cap-add=" + c);
}

// A JSON array of strings, as --entrypoint takes a command of several words.
std::string json_array(const std::vector<std::string>& words) {
  return json(words).dump();
}

}  // namespace

ContainerRunPlan podman_run_plan(const json& pod_spec, const json& container,
                                 const ContainerLaunch& launch) {
  ContainerRunPlan plan;
  if (std::string why = unsupported(pod_spec, container); !why.empty()) {
    plan.refusal = why;
    return plan;
  }
  if (std::string why = run_as_non_root_violation(pod_spec, container, launch); !why.empty()) {
    plan.refusal = why;
    return plan;
  }
  auto& args = plan.args;
  // podman's own defaults a CRI runtime does not add: TERM=xterm, container=podman.
  args = {"run",
          "--rm",
          "--pull=never",
          "--name=" + launch.name,
          "--log-driver=none",
          "--unsetenv=TERM",
          "--unsetenv=container"};
  if (!launch.owner_label.empty()) args.push_back("--label=" + launch.owner_label);
  args.insert(args.end(), launch.run_options.begin(), launch.run_options.end());
  if (launch.netns.empty()) {
    args.emplace_back("--network=host");
  } else {
    args.push_back("--network=ns:/run/netns/" + launch.netns);
  }
  if (!launch.hostname.empty()) args.push_back("--hostname=" + launch.hostname);
  if (is_true(at(pod_spec, "hostPID"))) args.emplace_back("--pid=host");
  if (is_true(at(pod_spec, "hostIPC"))) args.emplace_back("--ipc=host");

  const json& security = at(container, "securityContext");
  if (const std::string user = user_option(pod_spec, container, launch); !user.empty())
    args.push_back("--user=" + user);
  const json& pod_security = at(pod_spec, "securityContext");
  if (at(pod_security, "supplementalGroups").is_array())
    for (const auto& g : pod_security["supplementalGroups"])
      if (g.is_number_integer())
        args.push_back("--group-add=" + std::to_string(g.get<long long>()));
  if (at(pod_security, "fsGroup").is_number_integer())
    args.push_back("--group-add=" + std::to_string(pod_security["fsGroup"].get<long long>()));
  if (at(pod_security, "sysctls").is_array())
    for (const auto& s : pod_security["sysctls"])
      args.push_back("--sysctl=" + str(at(s, "name")) + "=" + str(at(s, "value")));

  if (is_true(at(security, "privileged"))) {
    args.emplace_back("--privileged");
  } else {
    add_capabilities(security, args);
    if (at(security, "allowPrivilegeEscalation").is_boolean() &&
        !security["allowPrivilegeEscalation"].get<bool>())
      args.emplace_back("--security-opt=no-new-privileges");
    // The kubelet's default without --seccomp-default is Unconfined.
    if (str(at(effective(pod_spec, container, "seccompProfile"), "type")) != "RuntimeDefault")
      args.emplace_back("--security-opt=seccomp=unconfined");
  }
  if (is_true(at(security, "readOnlyRootFilesystem"))) {
    args.emplace_back("--read-only");
    args.emplace_back("--read-only-tmpfs=false");  // the kubelet adds no /tmp, /run
  }

  if (const std::string dir = str(at(container, "workingDir")); !dir.empty())
    args.push_back("--workdir=" + dir);
  for (const auto& [name, value] : launch.env) args.push_back("--env=" + name + "=" + value);
  // A hosts file of the kubelet's: podman must not write its own over it.
  if (std::any_of(launch.mounts.begin(), launch.mounts.end(),
                  [](const BindMount& m) { return m.container_path == "/etc/hosts"; }))
    args.emplace_back("--no-hosts");
  for (const auto& m : launch.mounts)
    args.push_back("--mount=type=bind,source=" + m.host_path + ",destination=" + m.container_path +
                   (m.read_only ? ",ro=true" : ""));
  if (!launch.command.empty()) args.push_back("--entrypoint=" + json_array(launch.command));
  args.push_back(launch.image);
  args.insert(args.end(), launch.args.begin(), launch.args.end());
  return plan;
}

}  // namespace commgate::sim
