// The kubelet stand-in: runs the pods bound to the nodes it serves as local processes, or
// in container mode (KubeletOptions::podman) each container from its image with podman,
// as its securityContext says (sim/container_runtime.h; refusing what it cannot honour).
//
// What process mode models and the shortcuts it takes (docs/testing.md):
// - Each container runs `command` + `args` (with $(VAR) expanded from its env) as a local
//   process in a process group of its own. Images are not pulled: an image whose
//   repository (the reference without tag or digest) is in `image_entrypoints` stands for
//   one local program, its entrypoint: a container without `command` runs it with `args`,
//   and a `command[0]` with the program's file name (`/usr/local/bin/commgate` for a
//   local `build/bin/commgate`) runs it too. Any other image is ignored (the command runs
//   as it is), and a container of such an image without `command` cannot start.
// - Volumes: secret, configMap, emptyDir and projected (serviceAccountToken, secret,
//   configMap, downwardAPI) volumes are written into <pod dir>/volumes/<name>/ when the
//   pod starts (a missing Secret or ConfigMap that is not optional keeps the pod
//   Pending, as ContainerCreating); a path under a volumeMount's mountPath in command,
//   args or env values is replaced by the pod-local copy (as for the termination
//   message). Every pod also gets the service-account volume of upstream's admission
//   (unless automountServiceAccountToken is false): `token` (the sim's token for
//   system:serviceaccount:<ns>:<serviceAccountName>, `service_account_tokens`), `ca.crt`
//   and `namespace`, and env KUBERNETES_SERVICE_HOST/PORT naming the API server. With
//   `mount_namespaces` (root) each container runs in a private mount namespace where that
//   directory is bind-mounted at /var/run/secrets/kubernetes.io/serviceaccount, so an
//   in-cluster client reads it at its fixed path; without, only the path mapping applies.
// - Env: `value` and `valueFrom.fieldRef` (metadata.name/namespace/uid/labels['k']/
//   annotations['k'], spec.nodeName, spec.serviceAccountName, status.podIP/hostIP), plus
//   PATH, LD_LIBRARY_PATH, TMPDIR from the sim's environment, HOME, HOSTNAME, and
//   TERMINATION_LOG_PATH.
// - Termination messages: the container cannot write /dev/termination-log, so each
//   container gets a file in its pod's directory; the literal terminationMessagePath
//   (default /dev/termination-log) in command/args is replaced by that file, which is
//   also in env TERMINATION_LOG_PATH. Its first 4096 bytes become
//   state.terminated.message (FallbackToLogsOnError: the log's tail on failure).
// - Pod DNS: processes cannot query a cluster DNS, so an env value that is exactly a pod
//   DNS name (`<hostname>.<subdomain>[.<ns>[.svc[.cluster.local]]]`, with a Service named
//   <subdomain> in the namespace) is replaced by that pod's IP when the container starts;
//   the container waits (ContainerCreating) until the named pod is bound to a node.
// - Networking: a node annotated `sim.commgate.io/netns: <name>` runs its pods under
//   `ip netns exec` (needs root). With a spec.podCIDR (an IPv4 /24; scripts/netsim.sh
//   nodes, `--node-group ...,netns=P` gives node j 198.19.j.0/24) each pod has a network
//   namespace of its own with the next free address of that CIDR, reachable from every
//   node's pods, as a CNI bridge plugin gives it (sim/pod_network.h): two pods of one
//   node may listen on one port. A hostNetwork pod, and every pod of a node without a
//   podCIDR, shares the node's namespace (ports included) and has the node's InternalIP.
//   Other nodes' pods get 127.0.0.1. A pod DNS name resolves to the named pod's IP once
//   it has one. The API server on the host's loopback (api_host 127.0.0.1) is reached
//   from a namespace as from the host: the kubelet relays 127.0.0.1:<api_port> inside it
//   to the server (sim/netns_relay.h, the `kubernetes` Service's part of kube-proxy),
//   and runs readiness probes from inside the pod's namespace.
// - Working dir: spec workingDir, else the pod's own directory (also HOME); stdout and
//   stderr go to <pod dir>/<container>.log.
// - Readiness: a container with an httpGet readinessProbe (scheme HTTP or HTTPS, without
//   certificate verification as the kubelet's prober; port a number or a container port's
//   name; the pod's IP) is ready after successThreshold passes and unready after
//   failureThreshold failures, probed from initialDelaySeconds every periodSeconds (at
//   most `max_probe_period`); other containers are ready while running. exec and
//   tcpSocket readiness probes and every liveness/startup probe are not run (counted as
//   passing). The pod's Ready and ContainersReady conditions follow.
// - restartPolicy OnFailure/Always restart a failed container at once (no back-off),
//   counting restartCount; a container that cannot start under Always waits in
//   CrashLoopBackOff (not retried) and its pod stays Running. Deleting a pod sends
//   SIGTERM to its process groups and SIGKILL after terminationGracePeriodSeconds, capped
//   at `max_grace`.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "sim/netns_relay.h"
#include "sim/object_store.h"

namespace commgate::sim {

inline constexpr const char* kNetnsAnnotation = "sim.commgate.io/netns";

inline constexpr const char* kServiceAccountMountPath =
    "/var/run/secrets/kubernetes.io/serviceaccount";

// Where the kubelet keeps a pod's files (its volumes, termination messages, logs) under
// its work_dir, and the file a container's output goes to: the API server's pods/log
// subresource reads it there (`kubectl logs`).
std::string pod_directory(const std::string& work_dir, const std::string& ns,
                          const std::string& name, const std::string& uid);
std::string container_log_file(const std::string& pod_dir, const std::string& container);

struct KubeletOptions {
  std::string work_dir;  // pod directories go here; "" = a temp dir, removed at the end
  std::chrono::milliseconds max_grace{2000};  // cap on terminationGracePeriodSeconds
  // Image repository ("commgate/commgate", no tag or digest) -> the local program that is
  // its entrypoint (commgate-sim --image-entrypoint REPOSITORY=PATH).
  std::map<std::string, std::string> image_entrypoints;
  // The API server as pods see it: KUBERNETES_SERVICE_HOST/PORT ("" = not set) and the CA
  // written as ca.crt in the service-account volume.
  std::string api_host, api_port, api_ca_pem;
  // "<namespace>/<name>" of a ServiceAccount -> the bearer token the API server knows for
  // system:serviceaccount:<namespace>:<name>. A pod of another account gets an empty token.
  std::map<std::string, std::string> service_account_tokens;
  // Run each container in a private mount namespace (unshare -m) with the service-account
  // volume bind-mounted at kServiceAccountMountPath. Needs root; the directory is created
  // on the host once (empty) to mount on.
  bool mount_namespaces = false;
  // Readiness probes run every periodSeconds, but at most this far apart (a shortcut so
  // tests need not wait the chart's 5 s for a pod to turn Ready).
  std::chrono::milliseconds max_probe_period{1000};
  // Container mode (commgate-sim --pod-containers; root): each container runs from its
  // image with `podman run` (sim/container_runtime.h), as a CRI runtime runs it: the
  // image's files and USER, the pod's securityContext, its volumes bind-mounted at their
  // mountPaths, the pod's network namespace. `podman` is the command and its global
  // options (default_podman_command() in sim/podman.h); empty: process mode, above.
  std::vector<std::string> podman;
  std::vector<std::string> podman_run_options;  // given to every `podman run` (rlimits)
};

// --- Pure helpers (unit-tested) ---

// Splits a pod DNS name into hostname, subdomain and namespace (`default_ns` when the name
// has no namespace part); nullopt when it is not of that form.
struct PodDnsName {
  std::string hostname, subdomain, ns;
};
std::optional<PodDnsName> parse_pod_dns_name(const std::string& value,
                                             const std::string& default_ns);
// Expands $(VAR) from `env` as the kubelet does ($$ is a literal $; unknown names stay).
std::string expand_env_refs(const std::string& text, const std::map<std::string, std::string>& env);
// The value of a fieldRef path of `pod` ("metadata.annotations['k']", "status.podIP").
std::optional<std::string> field_ref_value(const nlohmann::json& pod, const std::string& path);
// An image reference's repository: without the digest (`@sha256:...`) and the tag (a
// `:` after the last `/`), registry and port kept ("reg:5000/a/b:1" -> "reg:5000/a/b").
std::string image_repository(const std::string& image);
// What a container runs before $(VAR) expansion: command + args, with the image's
// entrypoint (`entrypoints` by repository) for a missing command or a command[0] of the
// entrypoint's file name; empty when there is nothing to run.
std::vector<std::string> container_argv(const nlohmann::json& container,
                                        const std::map<std::string, std::string>& entrypoints);
// A path inside the container and where the kubelet put it on this machine.
struct PathMapping {
  std::string container_path, local_path;
};
// `text` with every path under a mapping's container_path (the path itself, or followed by
// `/`) replaced by its local_path; the longest container_path wins. A match must start
// the text or follow a character that cannot be in a path (`=`, `:`, `,`, space, quote).
std::string map_paths(const std::string& text, const std::vector<PathMapping>& mappings);
// The files of one pod volume (relative path -> content), from the objects it names.
// nullopt when a Secret or ConfigMap it needs (not `optional`) is missing; an empty map
// for emptyDir and kinds the sim does not fill.
struct VolumeSources {
  const nlohmann::json* pod = nullptr;
  std::function<std::optional<nlohmann::json>(const std::string& resource,
                                              const std::string& name)>
      find;                   // "secrets" / "configmaps" in the pod's namespace
  std::string token, ca_pem;  // a serviceAccountToken source's and kube-root-ca.crt's
};
std::optional<std::map<std::string, std::string>> volume_files(const nlohmann::json& volume,
                                                               const VolumeSources& sources);
// The mode of each of `files` (volume_files' paths): an item's `mode`, else the volume's
// (or projected's) defaultMode, else upstream's 0644.
std::map<std::string, int> volume_file_modes(const nlohmann::json& volume,
                                             const std::map<std::string, std::string>& files);
// Whether upstream mounts the volume read-only whatever its volumeMount says (secret,
// configMap, downwardAPI and projected: the kubelet's atomic-writer volumes).
bool is_api_data_volume(const nlohmann::json& volume);

class Kubelet {
 public:
  Kubelet(ObjectStore& store, KubeletOptions options);
  ~Kubelet();  // stop()
  Kubelet(const Kubelet&) = delete;
  Kubelet& operator=(const Kubelet&) = delete;

  void serve_node(const std::string& node_name);  // this kubelet runs the node's pods
  // The node is lost: its pods' processes are killed at once (SIGKILL) and the pods
  // marked Failed as the taint manager / pod GC would (DisruptionTarget condition,
  // reason NodeLost), without upstream's 300 s toleration; they are not deleted.
  void lose_node(const std::string& node_name);
  void start();
  // Kills every process it started (SIGKILL) and waits for them.
  void stop();
  const std::string& work_dir() const { return options_.work_dir; }

 private:
  struct Container {
    std::string name;
    pid_t pid = -1;
    int pidfd = -1;
    int restarts = 0;
    bool running = false;
    bool done = false;  // terminated and not to be restarted
    // Could not start under restartPolicy Always: shown waiting in CrashLoopBackOff
    // (never retried here), the pod Running.
    bool crash_looping = false;
    // readinessProbe (httpGet): ready once it has passed; probed again at next_probe.
    bool ready = false;
    int probe_failures = 0, probe_successes = 0;
    std::chrono::steady_clock::time_point next_probe;
    int exit_code = 0;
    std::string reason, message, started_at, finished_at;
    nlohmann::json last_state = nlohmann::json::object();
    std::string termination_file, log_file;
    std::map<std::string, std::string> env;  // as resolved at first start
    std::vector<PathMapping> mounts;         // its volumeMounts, mountPath -> pod-local
    // Container mode: podman's name for it and the `podman run` arguments (a restart
    // runs them again).
    std::string podman_name;
    std::vector<std::string> podman_args;
  };
  struct Pod {
    // netns: where its containers run (its own, its node's, or "" for the host's);
    // node_netns: its node's.
    std::string ns, name, uid, node, dir, pod_ip, host_ip, start_time, netns, node_netns;
    int network_index = 0;            // host index in the node's podCIDR; 0 = no network of its own
    std::string reported;             // the last problem written to stderr (each once)
    std::string service_account_dir;  // "" = no service-account volume
    nlohmann::json spec;
    std::vector<Container> containers;
    bool started = false;
    bool killing = false;
    std::chrono::steady_clock::time_point kill_deadline;
    bool killed_hard = false;
    bool lost = false;  // its node was lost (lose_node)
    // Container mode, before it starts: the container that cannot start yet and why
    // (state.waiting: ErrImageNeverPull, CreateContainerConfigError), tried again at
    // next_try.
    std::string waiting_container, waiting_reason, waiting_message;
    std::chrono::steady_clock::time_point next_try;
    // Each container's podman name and `podman run` arguments, between plan and start.
    std::vector<std::pair<std::string, std::vector<std::string>>> planned;
  };

  void run();
  // Runs the readiness probes that are due; returns when the next one is due, if any.
  std::optional<std::chrono::steady_clock::time_point> run_probes();
  void sync();
  void start_pod(Pod& pod, const nlohmann::json& object, const std::vector<nlohmann::json>& pods,
                 const std::vector<nlohmann::json>& nodes);
  // Writes the pod's volumes; false when one cannot be filled yet (the pod waits).
  bool write_volumes(Pod& pod, const nlohmann::json& object,
                     std::map<std::string, std::string>& volume_dirs);
  bool spawn(Pod& pod, Container& c, const nlohmann::json& spec,
             const std::map<std::string, std::string>& env, const std::string& netns);
  void reap(Pod& pod, Container& c, int status);
  // Signals the container's process group; in container mode a SIGKILL removes the
  // container (killing `podman run` alone would leave it running).
  void kill_container(Container& c, int signal);
  bool in_containers() const { return !options_.podman.empty(); }
  // Container mode: plans each container's `podman run` (c.podman_args); false, with the
  // pod's waiting_* set and its status written, when one cannot run as asked.
  bool plan_containers(Pod& pod, const nlohmann::json& containers,
                       const std::vector<std::map<std::string, std::string>>& envs,
                       const std::map<std::string, std::string>& volume_dirs);
  // A core/v1 Warning Event about the pod's container, as the kubelet records one.
  void record_warning(const Pod& pod, const std::string& container, const std::string& reason,
                      const std::string& message);
  // Container mode: the volumes' files get their modes, and with fsGroup that group, as
  // upstream's SetVolumeOwnership gives them (the container's user reads them).
  void set_volume_ownership(const Pod& pod, const std::map<std::string, std::string>& volume_dirs);
  void begin_kill(Pod& pod);
  void write_status(Pod& pod);
  void wake();
  // The pod's own network (sim/pod_network.h): the lowest host index no pod of `node`
  // holds (0 when all are taken), and its removal with the pod's API server relay.
  int free_network_index(const std::string& node) const;
  void release_pod_network(Pod& pod);
  // Writes a problem that keeps the pod from starting to stderr, once per problem.
  void report_once(Pod& pod, const std::string& problem);
  // Makes the API server reachable at 127.0.0.1:<api_port> inside `netns` (once).
  void relay_api_server(const std::string& netns);

  ObjectStore& store_;
  KubeletOptions options_;
  ResourceInfo pods_r_, nodes_r_, services_r_, secrets_r_, configmaps_r_, service_accounts_r_,
      events_r_;
  std::mutex mu_;  // nodes_ and pods_ (the thread owns pods_ otherwise)
  std::set<std::string> nodes_;
  std::set<std::string> lost_nodes_;
  std::map<std::string, Pod> pods_;                                // by uid
  std::map<std::string, std::unique_ptr<NetnsRelay>> api_relays_;  // by netns
  std::vector<uint64_t> watches_;
  int event_fd_ = -1;
  bool owns_work_dir_ = false;  // a temp dir made here, removed with the kubelet
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace commgate::sim
