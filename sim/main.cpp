// commgate-sim: the simulated Kubernetes API server (docs/testing.md). Wires flags to an
// ApiServer (and a SimCluster of --nodes whose pods run as local processes), writes the
// kubeconfig, prints the port, and serves until SIGINT/SIGTERM.
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "sim/api_server.h"
#include "sim/authentication.h"
#include "sim/cluster.h"
#include "sim/node_groups.h"
#include "sim/podman.h"

namespace {

void usage() {
  std::cerr << "usage: commgate-sim [--port N] [--kubeconfig-out FILE] [--token T]\n"
               "                    [--user TOKEN=USERNAME[,GROUP...]]...\n"
               "                    [--kubeconfig-out-user USERNAME=FILE]...\n"
               "                    [--history N] [--bookmark-interval-ms N]\n"
               "                    [--service NAME.NAMESPACE=HOST:PORT]...\n"
               "                    [--nodes N] [--gpus-per-node G] [--node-netns PREFIX]\n"
               "                    [--node-labels K=V[,K=V...]]\n"
               "                    [--node-group N[,gpus=G][,netns=PREFIX][,label=K=V]...]...\n"
               "                    [--pod-dir DIR] [--authorization rbac|always-allow]\n"
               "                    [--enable-admission-plugins NAME[,NAME...]]\n"
               "                    [--image-entrypoint REPOSITORY=PATH]...\n"
               "                    [--pod-mount-namespaces] [--pod-containers] [--kueue]\n"
               "  --token: the admin's bearer token (kubernetes-admin, system:masters)\n"
               "  --user: one more identity; a service account's name\n"
               "    (system:serviceaccount:NS:NAME) gets its groups, everyone\n"
               "    system:authenticated; repeatable\n"
               "  --kubeconfig-out-user: a kubeconfig authenticating as that --user; repeatable\n"
               "  --nodes: N nodes whose pods run as local processes, with the scheduler and\n"
               "    Job controller (none of them without nodes); --gpus-per-node,\n"
               "    --node-netns and --node-labels apply to them\n"
               "  --node-netns: node i is netns PREFIX-n<i> at 198.18.0.<i+1>, each of its\n"
               "    pods in a namespace of its own at 198.19.<i>.<k> (as `NETSIM_PREFIX=PREFIX\n"
               "    scripts/netsim.sh up N` makes them; root)\n"
               "  --node-group: N more nodes with their own GPUs, netns prefix and labels\n"
               "    (e.g. a pool on another link); names continue sim-node-<k>; repeatable\n"
               "  --authorization: always-allow (the default) or rbac: the stored Roles,\n"
               "    ClusterRoles and bindings decide (403 as kube-apiserver words it);\n"
               "    the admin (system:masters) is always allowed\n"
               "  --enable-admission-plugins: OwnerReferencesPermissionEnforcement (off by\n"
               "    default): blockOwnerDeletion needs update on the owner's finalizers\n"
               "  --image-entrypoint: pods of image REPOSITORY (no tag or digest, e.g.\n"
               "    commgate/commgate) run the local program PATH as its entrypoint (a\n"
               "    container without command, or a command[0] of PATH's file name);\n"
               "    repeatable\n"
               "  --pod-mount-namespaces: each container in a private mount namespace with\n"
               "    its service-account token at\n"
               "    /var/run/secrets/kubernetes.io/serviceaccount (root; without it only\n"
               "    paths in command, args and env are mapped)\n"
               "  --pod-containers: run each container from its image with podman (root),\n"
               "    as a container runtime would: the image's files and USER, the pod's\n"
               "    securityContext, volumes mounted at their mountPaths; a pod it cannot\n"
               "    run as asked waits with the reason in its status (docs/testing.md)\n"
               "  --kueue: run the Kueue stand-in (docs/testing.md, \"Kueue\"): once the\n"
               "    Kueue v1beta2 CRDs are created, labelled Jobs, PyTorchJobs, JobSets\n"
               "    and TrainJobs get Workloads, quota and admission checks as Kueue\n"
               "    v0.19.2 gives them\n"
               "  --service: where a service that webhook configurations name listens\n"
               "             (the sim has no cluster DNS); repeatable\n";
}

// Writes `content` to `path` ("" writes nothing); throws when it cannot.
// A kubeconfig holds a bearer token: readable by its owner only (0600, as kubectl writes
// its own), also when the file was already there with a wider mode.
void write_file(const std::string& path, const std::string& content) {
  if (path.empty()) return;
  {
    std::ofstream out(path, std::ios::trunc);
    if (!out) throw std::runtime_error("cannot write " + path);
  }
  std::error_code ec;
  std::filesystem::permissions(
      path, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write, ec);
  if (ec) throw std::runtime_error("cannot make " + path + " private: " + ec.message());
  std::ofstream out(path, std::ios::trunc);
  out << content;
  if (!out) throw std::runtime_error("cannot write " + path);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace commgate::sim;
  ApiServerOptions options;
  std::string kubeconfig_out;
  struct Service {
    std::string name, ns, host_port;
  };
  std::vector<Service> services;
  NodeGroup first;  // --nodes, --gpus-per-node, --node-netns, --node-labels
  std::vector<NodeGroup> more_groups;
  std::vector<std::pair<std::string, std::string>> user_kubeconfigs;  // (username, file)
  std::string pod_dir;
  KubeletOptions kubelet;
  bool kueue = false;           // --kueue
  bool pod_containers = false;  // --pod-containers
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::cerr << "commgate-sim: " << arg << " needs a value\n";
        std::exit(2);
      }
      return argv[++i];
    };
    try {
      if (arg == "--port") {
        options.port = static_cast<uint16_t>(std::stoul(value()));
      } else if (arg == "--kubeconfig-out") {
        kubeconfig_out = value();
      } else if (arg == "--token") {
        options.token = value();
      } else if (arg == "--user") {
        options.users.push_back(parse_user_flag(value()));
      } else if (arg == "--kubeconfig-out-user") {
        const std::string v = value();
        const auto eq = v.find('=');
        if (eq == std::string::npos || eq == 0 || eq + 1 == v.size()) {
          std::cerr << "commgate-sim: --kubeconfig-out-user wants USERNAME=FILE, got \"" << v
                    << "\"\n";
          return 2;
        }
        user_kubeconfigs.emplace_back(v.substr(0, eq), v.substr(eq + 1));
      } else if (arg == "--history") {
        options.history_limit = std::stoul(value());
      } else if (arg == "--bookmark-interval-ms") {
        options.bookmark_interval = std::chrono::milliseconds(std::stoul(value()));
      } else if (arg == "--service") {
        const std::string v = value();
        const auto eq = v.find('=');
        const auto dot = v.find('.');
        if (eq == std::string::npos || dot == std::string::npos || dot > eq || dot == 0 ||
            dot + 1 == eq) {
          std::cerr << "commgate-sim: --service wants NAME.NAMESPACE=HOST:PORT, got \"" << v
                    << "\"\n";
          return 2;
        }
        services.push_back({v.substr(0, dot), v.substr(dot + 1, eq - dot - 1), v.substr(eq + 1)});
      } else if (arg == "--nodes") {
        first.count = std::stoi(value());
      } else if (arg == "--gpus-per-node") {
        first.gpus = std::stoi(value());
      } else if (arg == "--node-netns") {
        first.netns_prefix = value();
      } else if (arg == "--node-labels") {
        first.labels = parse_node_labels(value());
      } else if (arg == "--node-group") {
        more_groups.push_back(parse_node_group(value()));
      } else if (arg == "--pod-dir") {
        pod_dir = value();
      } else if (arg == "--image-entrypoint") {
        const std::string v = value();
        const auto eq = v.find('=');
        if (eq == std::string::npos || eq == 0 || eq + 1 == v.size() ||
            image_repository(v.substr(0, eq)) != v.substr(0, eq)) {
          std::cerr << "commgate-sim: --image-entrypoint wants REPOSITORY=PATH (a repository "
                       "without tag or digest), got \""
                    << v << "\"\n";
          return 2;
        }
        const std::string program = v.substr(eq + 1);
        if (access(program.c_str(), X_OK) != 0) {
          std::cerr << "commgate-sim: --image-entrypoint " << v.substr(0, eq) << ": " << program
                    << " is not an executable file\n";
          return 2;
        }
        kubelet.image_entrypoints[v.substr(0, eq)] = program;
      } else if (arg == "--kueue") {
        kueue = true;
      } else if (arg == "--pod-mount-namespaces") {
        kubelet.mount_namespaces = true;
      } else if (arg == "--pod-containers") {
        if (geteuid() != 0) {
          std::cerr << "commgate-sim: --pod-containers runs podman rootful: run as root\n";
          return 2;
        }
        kubelet.podman = default_podman_command();
        kubelet.podman_run_options = default_podman_run_options();
        pod_containers = true;
      } else if (arg == "--authorization") {
        const std::string v = value();
        if (v == "rbac" || v == "RBAC") {
          options.authorization = AuthorizationMode::kRbac;
        } else if (v == "always-allow" || v == "AlwaysAllow") {
          options.authorization = AuthorizationMode::kAlwaysAllow;
        } else {
          std::cerr << "commgate-sim: --authorization wants rbac or always-allow, got \"" << v
                    << "\"\n";
          return 2;
        }
      } else if (arg == "--enable-admission-plugins") {
        options.admission_plugins = parse_admission_plugins(value());
      } else if (arg == "-h" || arg == "--help") {
        usage();
        return 0;
      } else {
        std::cerr << "commgate-sim: unknown flag " << arg << "\n";
        usage();
        return 2;
      }
    } catch (const std::invalid_argument& e) {
      // The parsers' messages name what is wrong; std::stoi's do not.
      const std::string what = e.what();
      std::cerr << "commgate-sim: " << (what.rfind("sto", 0) == 0 ? "bad value for " + arg : what)
                << "\n";
      return 2;
    } catch (const std::exception&) {
      std::cerr << "commgate-sim: bad value for " << arg << "\n";
      return 2;
    }
  }

  // Process mode's stand-ins for what an image provides have no place beside the images.
  if (pod_containers && (!kubelet.image_entrypoints.empty() || kubelet.mount_namespaces)) {
    std::cerr << "commgate-sim: --pod-containers runs each pod's images themselves; "
              << (kubelet.image_entrypoints.empty() ? "--pod-mount-namespaces"
                                                    : "--image-entrypoint")
              << " is process mode's stand-in for an image and cannot be combined with it\n";
    return 2;
  }

  // Block the stop signals in every thread; main waits for them with sigwait.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  try {
    ApiServer server(options);
    for (const auto& s : services) server.register_service(s.name, s.ns, s.host_port);
    server.start();
    std::vector<NodeGroup> groups;
    if (first.count > 0) groups.push_back(first);
    groups.insert(groups.end(), more_groups.begin(), more_groups.end());
    const auto nodes = node_specs(groups);
    kubelet.work_dir = pod_dir;
    point_pods_at(kubelet, server, options.users);
    SimCluster cluster(server.store(), kubelet);
    server.serve_pod_logs_from(cluster.work_dir());
    // No nodes: no controllers either, so the API alone serves (and benchmarks) as
    // before; pods and Jobs then stay as created.
    if (!nodes.empty()) cluster.start();
    if (kueue) cluster.start_kueue();
    for (const auto& node : nodes) cluster.add_node(node);
    write_file(kubeconfig_out, server.kubeconfig());
    for (const auto& [user, file] : user_kubeconfigs) write_file(file, server.kubeconfig_for(user));
    // The CA as a file too, for clients that take a path (curl --cacert, benchmarks).
    std::cout << "commgate-sim CA certificate " << server.pki_dir() << "/ca.crt" << std::endl;
    std::cout << "commgate-sim listening on " << server.url() << " port " << server.port()
              << std::endl;
    int sig = 0;
    sigwait(&signals, &sig);
    cluster.stop();  // kills the pods' processes
    server.stop();
  } catch (const std::exception& e) {
    std::cerr << "commgate-sim: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
