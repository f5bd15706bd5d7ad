// commgate-sim: the simulated Kubernetes API server (docs/testing.md). Wires flags to an
// ApiServer (and a SimCluster of --nodes whose pods run as local processes), writes the
// kubeconfig, prints the port, and serves until SIGINT/SIGTERM.
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "sim/api_server.h"
#include "sim/cluster.h"

namespace {

void usage() {
  std::cerr << "usage: commgate-sim [--port N] [--kubeconfig-out FILE] [--token T]\n"
               "                    [--history N] [--bookmark-interval-ms N]\n"
               "                    [--service NAME.NAMESPACE=HOST:PORT]...\n"
               "                    [--nodes N] [--gpus-per-node G] [--node-netns PREFIX]\n"
               "                    [--pod-dir DIR]\n"
               "  --nodes: N nodes sim-node-0.. whose pods run as local processes, with the\n"
               "    scheduler and Job controller (none of them without --nodes)\n"
               "  --node-netns: node i runs its pods in netns PREFIX-n<i> with pod IP\n"
               "    198.18.0.<i+1> (as `NETSIM_PREFIX=PREFIX scripts/netsim.sh up N`; root)\n"
               "  --service: where a service that webhook configurations name listens\n"
               "             (the sim has no cluster DNS); repeatable\n";
}

}  // namespace

int main(int argc, char** argv) {
  commgate::sim::ApiServerOptions options;
  std::string kubeconfig_out;
  struct Service {
    std::string name, ns, host_port;
  };
  std::vector<Service> services;
  int nodes = 0, gpus_per_node = 0;
  std::string node_netns, pod_dir;
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
        nodes = std::stoi(value());
      } else if (arg == "--gpus-per-node") {
        gpus_per_node = std::stoi(value());
      } else if (arg == "--node-netns") {
        node_netns = value();
      } else if (arg == "--pod-dir") {
        pod_dir = value();
      } else if (arg == "-h" || arg == "--help") {
        usage();
        return 0;
      } else {
        std::cerr << "commgate-sim: unknown flag " << arg << "\n";
        usage();
        return 2;
      }
    } catch (const std::exception&) {
      std::cerr << "commgate-sim: bad value for " << arg << "\n";
      return 2;
    }
  }

  // Block the stop signals in every thread; main waits for them with sigwait.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  try {
    commgate::sim::ApiServer server(options);
    for (const auto& s : services) server.register_service(s.name, s.ns, s.host_port);
    server.start();
    commgate::sim::SimCluster cluster(server.store(), {.work_dir = pod_dir});
    // No --nodes: no controllers either, so the API alone serves (and benchmarks) as
    // before; pods and Jobs then stay as created.
    if (nodes > 0) cluster.start();
    for (int n = 0; n < nodes; ++n) {
      commgate::sim::NodeSpec node =
          commgate::sim::node_spec("sim-node-" + std::to_string(n), gpus_per_node);
      if (!node_netns.empty()) {
        node.netns = node_netns + "-n" + std::to_string(n);
        node.address = "198.18.0." + std::to_string(n + 1);
      }
      cluster.add_node(node);
    }
    if (!kubeconfig_out.empty()) {
      std::ofstream out(kubeconfig_out, std::ios::trunc);
      out << server.kubeconfig();
      if (!out) throw std::runtime_error("cannot write " + kubeconfig_out);
    }
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
