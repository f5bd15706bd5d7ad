// The simulated cluster's control loops around an ObjectStore: the scheduler, a kubelet
// for the nodes added here, the Job controller and the Deployment/ReplicaSet controller. Composed
// with an ApiServer by giving it the server's store (SimCluster cluster(server.store())); the
// controllers talk to the store through its API only and do their work on their own threads.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "sim/api_server.h"
#include "sim/authentication.h"
#include "sim/deployment_controller.h"
#include "sim/job_controller.h"
#include "sim/kubelet.h"
#include "sim/kueue_controller.h"
#include "sim/object_store.h"
#include "sim/scheduler.h"

namespace commgate::sim {

struct NodeSpec {
  std::string name;
  int gpus = 0;
  std::string cpu = "8";
  std::string memory = "32Gi";
  int max_pods = 110;
  std::map<std::string, std::string> labels;  // kubernetes.io/hostname is added
  nlohmann::json taints = nlohmann::json::array();
  // Run the node's pods under `ip netns exec <netns>` with pod IP `address` (root only;
  // scripts/netsim.sh makes such namespaces). "" = host network, pod IP 127.0.0.1.
  std::string netns;
  std::string address;
  // spec.podCIDR: with `netns`, each pod gets a namespace and an address of its own from
  // it (sim/pod_network.h; scripts/netsim.sh gives node i 198.19.i.0/24). "" = pods share
  // the node's namespace and address.
  std::string pod_cidr;
};

// A NodeSpec with the defaults but for name and GPU count.
NodeSpec node_spec(std::string name, int gpus = 0);

// The Node object for `spec`: labels, taints, capacity = allocatable, Ready condition.
nlohmann::json node_object(const NodeSpec& spec);

// Points the pods of `options` at `server` as a cluster points its pods at the API server:
// KUBERNETES_SERVICE_HOST/PORT, its CA as the service-account volume's ca.crt, and for
// each service-account user among `users` (system:serviceaccount:<ns>:<name>) its token
// as that account's projected token, so RBAC decides the pod's requests as the account.
void point_pods_at(KubeletOptions& options, const ApiServer& server,
                   const std::vector<TokenUser>& users);

class SimCluster {
 public:
  explicit SimCluster(ObjectStore& store, KubeletOptions kubelet = {});
  ~SimCluster();  // stop()
  SimCluster(const SimCluster&) = delete;
  SimCluster& operator=(const SimCluster&) = delete;

  void start();
  void stop();  // kills every pod process
  // Creates the Node and runs its pods with this cluster's kubelet.
  void add_node(const NodeSpec& spec);
  // Fault injection: the node stops (its kubelet is gone). The Node turns Ready=Unknown
  // with the node.kubernetes.io/unreachable NoSchedule and NoExecute taints, and its pods
  // fail at once (Kubelet::lose_node); nothing new is scheduled there.
  void stop_node(const std::string& name);
  const std::string& work_dir() const { return kubelet_.work_dir(); }
  // Starts the Kueue stand-in (sim/kueue_controller.h) beside the other controllers,
  // with or without start(); stop() stops it. Only when asked: a cluster without Kueue
  // leaves labelled jobs alone, as a real one does.
  void start_kueue();

 private:
  ObjectStore& store_;
  Scheduler scheduler_;
  Kubelet kubelet_;
  JobController jobs_;
  DeploymentController deployments_;
  std::unique_ptr<KueueController> kueue_;
  bool started_ = false;
};

}  // namespace commgate::sim
