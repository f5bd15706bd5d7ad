// The kubelet stand-in: runs the pods bound to the nodes it serves as local processes.
//
// What it models and the shortcuts it takes (docs/testing.md):
// - Each container runs `command` + `args` (with $(VAR) expanded from its env) as a local
//   process in a process group of its own; the image is ignored, and a container without
//   `command` cannot start (there is no image entrypoint to fall back to).
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
//   `ip netns exec <name>` (needs root) and its pods' IP is the node's InternalIP; other
//   nodes' pods get 127.0.0.1.
// - Working dir: spec workingDir, else the pod's own directory (also HOME); stdout and
//   stderr go to <pod dir>/<container>.log.
// - restartPolicy OnFailure/Always restart a failed container at once (no back-off),
//   counting restartCount. Deleting a pod sends SIGTERM to its process groups and SIGKILL
//   after terminationGracePeriodSeconds, capped at `max_grace`.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "sim/object_store.h"

namespace commgate::sim {

inline constexpr const char* kNetnsAnnotation = "sim.commgate.io/netns";

struct KubeletOptions {
  std::string work_dir;  // pod directories go here; "" = a temp dir, removed at the end
  std::chrono::milliseconds max_grace{2000};  // cap on terminationGracePeriodSeconds
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
    int exit_code = 0;
    std::string reason, message, started_at, finished_at;
    nlohmann::json last_state = nlohmann::json::object();
    std::string termination_file, log_file;
    std::map<std::string, std::string> env;  // as resolved at first start
  };
  struct Pod {
    std::string ns, name, uid, node, dir, pod_ip, host_ip, start_time, netns;
    nlohmann::json spec;
    std::vector<Container> containers;
    bool started = false;
    bool killing = false;
    std::chrono::steady_clock::time_point kill_deadline;
    bool killed_hard = false;
    bool lost = false;  // its node was lost (lose_node)
  };

  void run();
  void sync();
  void start_pod(Pod& pod, const nlohmann::json& object, const std::vector<nlohmann::json>& pods,
                 const std::vector<nlohmann::json>& nodes);
  bool spawn(Pod& pod, Container& c, const nlohmann::json& spec,
             const std::map<std::string, std::string>& env, const std::string& netns);
  void reap(Pod& pod, Container& c, int status);
  void begin_kill(Pod& pod);
  void write_status(Pod& pod);
  void wake();

  ObjectStore& store_;
  KubeletOptions options_;
  ResourceInfo pods_r_, nodes_r_, services_r_;
  std::mutex mu_;  // nodes_ and pods_ (the thread owns pods_ otherwise)
  std::set<std::string> nodes_;
  std::set<std::string> lost_nodes_;
  std::map<std::string, Pod> pods_;  // by uid
  std::vector<uint64_t> watches_;
  int event_fd_ = -1;
  bool owns_work_dir_ = false;  // a temp dir made here, removed with the kubelet
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace commgate::sim
