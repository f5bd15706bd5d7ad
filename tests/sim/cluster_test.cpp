// The simulated cluster with real processes: scheduler, kubelet and Job controller over an
// ObjectStore (no HTTP), as the commgate operator's probe Job will use them.
#include "sim/cluster.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "sim/api_status.h"
#include "sim/service_directory.h"
#include "tests/support/wait.h"

namespace commgate::sim {
namespace COMMGATE_TEST_UNIT {

using nlohmann::json;
using namespace std::chrono_literals;

// Polls `done` until it holds or `limit` passes: the state is in the store, written by
// other threads; a watch would do, but the checks read several objects at once.
bool eventually(const std::function<bool()>& done, std::chrono::milliseconds limit = 10s) {
  return testing::wait_until(done, limit);
}

// The pod's .status, or {} before anyone wrote one.
json status_of(const json& obj) {
  return obj.value("status", json::object());
}

json sh_container(const std::string& script, json extra = json::object()) {
  json c = {{"name", "main"}, {"image", "ignored"}, {"command", {"sh", "-c", script}}};
  c.merge_patch(extra);
  return c;
}

json indexed_job(const std::string& name, int n, const json& container, int backoff = 6) {
  return {{"metadata", {{"name", name}}},
          {"spec",
           {{"completionMode", "Indexed"},
            {"completions", n},
            {"parallelism", n},
            {"backoffLimit", backoff},
            {"template",
             {{"metadata", {{"labels", {{"app", name}}}}},
              {"spec", {{"restartPolicy", "Never"}, {"containers", {container}}}}}}}}};
}

class ClusterTest : public ::testing::Test {
 protected:
  ObjectStore store;
  ResourceInfo pods = *store.find_resource("", "v1", "pods");
  ResourceInfo jobs = *store.find_resource("batch", "v1", "jobs");
  ResourceInfo services = *store.find_resource("", "v1", "services");
  std::unique_ptr<SimCluster> cluster;

  void SetUp() override {
    cluster = std::make_unique<SimCluster>(store);
    cluster->start();
  }
  void TearDown() override { cluster->stop(); }

  std::vector<json> pods_of(const std::string& app) {
    ListOptions o;
    o.labels = LabelSelectorQuery::parse("app=" + app);
    return store.list(pods, "default", o).items;
  }
  json job(const std::string& name) { return store.get(jobs, "default", name); }
  bool has_condition(const json& obj, const std::string& type, const std::string& reason = "") {
    if (!obj.contains("status") || !obj["status"].contains("conditions")) return false;
    for (const auto& c : obj["status"]["conditions"])
      if (c["type"] == type && c["status"] == "True" &&
          (reason.empty() || c.value("reason", "") == reason))
        return true;
    return false;
  }
  std::string pod_dir(const json& pod) {
    return cluster->work_dir() + "/default_" + pod["metadata"]["name"].get<std::string>() + "_" +
           pod["metadata"]["uid"].get<std::string>();
  }
  pid_t read_pid(const std::string& path) {
    pid_t pid = 0;
    eventually([&] {
      std::ifstream in(path);
      return static_cast<bool>(in >> pid);
    });
    return pid;
  }
  bool exists(const ResourceInfo& r, const std::string& name) {
    try {
      store.get(r, "default", name);
      return true;
    } catch (const ApiError&) {
      return false;
    }
  }
};

TEST_F(ClusterTest, indexed_job_completes_with_each_index_as_termination_message) {
  cluster->add_node(node_spec("n1"));
  store.create(
      jobs, "default",
      indexed_job("probe", 3, sh_container("echo $JOB_COMPLETION_INDEX > /dev/termination-log")));
  ASSERT_TRUE(eventually([&] {
    return has_condition(job("probe"), "Complete", "CompletionsReached");
  })) << job("probe").dump(2);
  const json j = job("probe");
  EXPECT_TRUE(has_condition(j, "SuccessCriteriaMet"));
  EXPECT_EQ(j["status"]["succeeded"], 3);
  EXPECT_EQ(j["status"]["completedIndexes"], "0-2");
  EXPECT_TRUE(j["status"].contains("completionTime"));
  const auto all = pods_of("probe");
  ASSERT_EQ(all.size(), 3u);
  for (const auto& p : all) {
    const std::string index =
        p["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"];
    EXPECT_EQ(p["metadata"]["name"].get<std::string>().rfind("probe-" + index + "-", 0), 0u);
    EXPECT_EQ(p["spec"]["hostname"], "probe-" + index);
    EXPECT_EQ(p["spec"]["nodeName"], "n1");
    EXPECT_EQ(p["status"]["phase"], "Succeeded");
    EXPECT_EQ(p["status"]["podIP"], "127.0.0.1");
    const json t = p["status"]["containerStatuses"][0]["state"]["terminated"];
    EXPECT_EQ(t["exitCode"], 0);
    EXPECT_EQ(t["reason"], "Completed");
    EXPECT_EQ(t["message"], index + "\n");
    EXPECT_EQ(p["metadata"]["ownerReferences"][0]["uid"], j["metadata"]["uid"]);
    EXPECT_EQ(p["metadata"]["ownerReferences"][0]["controller"], true);
  }
}

TEST_F(ClusterTest, failing_pods_exceed_backoff_limit_and_fail_the_job) {
  cluster->add_node(node_spec("n1"));
  store.create(jobs, "default",
               indexed_job("bad", 1, sh_container("echo broken >&2; exit 3"), /*backoff=*/1));
  ASSERT_TRUE(eventually([&] {
    return has_condition(job("bad"), "Failed", "BackoffLimitExceeded");
  })) << job("bad").dump(2);
  const json j = job("bad");
  EXPECT_TRUE(has_condition(j, "FailureTarget"));
  EXPECT_EQ(j["status"]["failed"], 2);  // the first failure was retried once
  EXPECT_EQ(j["status"]["active"], 0);
  const auto all = pods_of("bad");
  ASSERT_EQ(all.size(), 2u);
  for (const auto& p : all) {
    EXPECT_EQ(p["status"]["phase"], "Failed");
    EXPECT_EQ(p["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"], 3);
    EXPECT_EQ(p["status"]["containerStatuses"][0]["state"]["terminated"]["reason"], "Error");
  }
}

TEST_F(ClusterTest, anti_affinity_leaves_the_third_pod_pending_with_the_scheduler_message) {
  cluster->add_node(node_spec("n1"));
  cluster->add_node(node_spec("n2"));
  json c = sh_container("exec sleep 30", {{"terminationGracePeriodSeconds", 0}});
  json j = indexed_job("spread", 3, c);
  j["spec"]["template"]["spec"]["affinity"] = {
      {"podAntiAffinity",
       {{"requiredDuringSchedulingIgnoredDuringExecution",
         {{{"topologyKey", "kubernetes.io/hostname"},
           {"labelSelector", {{"matchLabels", {{"app", "spread"}}}}}}}}}}};
  store.create(jobs, "default", j);
  std::string message;
  ASSERT_TRUE(eventually([&] {
    int running = 0;
    for (const auto& p : pods_of("spread")) {
      if (p.value("status", json::object()).value("phase", "") == "Running") ++running;
      for (const auto& cond : p.value("status", json::object()).value("conditions", json::array()))
        if (cond["type"] == "PodScheduled" && cond["status"] == "False") message = cond["message"];
    }
    return running == 2 && !message.empty();
  }));
  EXPECT_EQ(message, "0/2 nodes are available: 2 node(s) didn't match pod anti-affinity rules.");
  EXPECT_TRUE(eventually([&] {
    const json st = job("spread")["status"];
    return st.value("active", 0) == 3 && st.value("ready", 0) == 2;
  })) << job("spread")["status"].dump();
}

TEST_F(ClusterTest, gpu_capacity_is_respected) {
  cluster->add_node(node_spec("gpu", 2));
  cluster->add_node(node_spec("cpu", 0));
  for (const char* name : {"a", "b", "c"})
    store.create(pods, "default",
                 {{"metadata", {{"name", name}, {"labels", {{"app", "gpu"}}}}},
                  {"spec",
                   {{"restartPolicy", "Never"},
                    {"terminationGracePeriodSeconds", 0},
                    {"containers",
                     {sh_container("exec sleep 30",
                                   {{"resources", {{"limits", {{"nvidia.com/gpu", 1}}}}}})}}}}});
  std::string message;
  ASSERT_TRUE(eventually([&] {
    int on_gpu = 0;
    for (const auto& p : pods_of("gpu")) {
      if (p["spec"].value("nodeName", "") == "gpu") ++on_gpu;
      for (const auto& cond : p.value("status", json::object()).value("conditions", json::array()))
        if (cond["type"] == "PodScheduled" && cond["status"] == "False") message = cond["message"];
    }
    return on_gpu == 2 && !message.empty();
  }));
  EXPECT_EQ(message, "0/2 nodes are available: 2 Insufficient nvidia.com/gpu.");
  EXPECT_FALSE(store.get(pods, "default", "c")["spec"].contains("nodeName"));
  // Freeing a GPU lets the pending pod in.
  store.remove(pods, "default", "a");
  EXPECT_TRUE(eventually(
      [&] { return store.get(pods, "default", "c")["spec"].value("nodeName", "") == "gpu"; }));
}

// "$$$$": the kubelet's $(VAR) expansion turns "$$" into "$", so the shell sees "$$".
TEST_F(ClusterTest, deleting_a_job_in_background_removes_its_pods_and_kills_their_processes) {
  cluster->add_node(node_spec("n1"));
  store.create(jobs, "default",
               indexed_job("long", 2, sh_container("echo $$$$ > pid; exec sleep 30")));
  ASSERT_TRUE(eventually([&] {
    const auto all = pods_of("long");
    return all.size() == 2 &&
           all[0].value("status", json::object()).value("phase", "") == "Running" &&
           all[1].value("status", json::object()).value("phase", "") == "Running";
  }));
  std::vector<pid_t> pids;
  for (const auto& p : pods_of("long")) pids.push_back(read_pid(pod_dir(p) + "/pid"));
  for (pid_t pid : pids) ASSERT_GT(pid, 0);
  store.remove(jobs, "default", "long", {Propagation::kBackground});
  EXPECT_TRUE(pods_of("long").empty());
  // sleep ignores nothing: SIGTERM ends it; the kubelet reaps it, so the pid is gone.
  for (pid_t pid : pids)
    EXPECT_TRUE(eventually([&] { return kill(pid, 0) != 0 && errno == ESRCH; })) << pid;
}

TEST_F(ClusterTest, a_finalizer_keeps_a_killed_pod_until_it_is_removed) {
  cluster->add_node(node_spec("n1"));
  store.create(pods, "default",
               {{"metadata", {{"name", "held"}, {"finalizers", {"example.com/hold"}}}},
                {"spec",
                 {{"restartPolicy", "Never"},
                  {"containers", {sh_container("echo $$$$ > pid; exec sleep 30")}}}}});
  ASSERT_TRUE(eventually([&] {
    return store.get(pods, "default", "held").value("status", json::object()).value("phase", "") ==
           "Running";
  }));
  const pid_t pid = read_pid(pod_dir(store.get(pods, "default", "held")) + "/pid");
  ASSERT_GT(pid, 0);
  store.remove(pods, "default", "held");
  EXPECT_TRUE(eventually([&] { return kill(pid, 0) != 0 && errno == ESRCH; }));
  ASSERT_TRUE(exists(pods, "held"));
  EXPECT_TRUE(store.get(pods, "default", "held")["metadata"].contains("deletionTimestamp"));
  store.mutate(pods, "default", "held", WritePart::kMain, [](const json& cur) {
    json next = cur;
    next["metadata"].erase("finalizers");
    return next;
  });
  EXPECT_FALSE(exists(pods, "held"));
}

TEST_F(ClusterTest, foreground_deletion_removes_pods_before_the_job) {
  cluster->add_node(node_spec("n1"));
  store.create(jobs, "default", indexed_job("fg", 2, sh_container("exec sleep 30")));
  ASSERT_TRUE(eventually([&] { return pods_of("fg").size() == 2; }));
  std::mutex mu;
  std::vector<std::string> trace;
  std::vector<uint64_t> ids;
  for (const ResourceInfo* r : {&jobs, &pods}) {
    WatchRequest w;
    w.from = store.resource_version();
    w.deliver = [&, kind = r->kind](const WatchEvent& e) {
      std::lock_guard<std::mutex> lock(mu);
      if (e.type == "DELETED" ||
          (e.type == "MODIFIED" && e.object["metadata"].contains("deletionTimestamp")))
        trace.push_back(e.type + " " + kind);
      return true;
    };
    ids.push_back(store.watch(*r, std::move(w)));
  }
  store.remove(jobs, "default", "fg", {Propagation::kForeground});
  for (uint64_t id : ids) store.unwatch(id);
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_EQ(trace, (std::vector<std::string>{"MODIFIED Job", "DELETED Pod", "DELETED Pod",
                                             "DELETED Job"}));
}

TEST_F(ClusterTest, pod_dns_names_in_env_resolve_to_the_pod_ip) {
  cluster->add_node(node_spec("n1"));
  store.create(services, "default",
               {{"metadata", {{"name", "ranks"}}},
                {"spec", {{"clusterIP", "None"}, {"selector", {{"app", "dns"}}}}}});
  json j = indexed_job(
      "dns", 2,
      sh_container(
          "echo $MASTER_ADDR > /dev/termination-log",
          {{"env",
            {{{"name", "MASTER_ADDR"}, {"value", "dns-0.ranks.default.svc.cluster.local"}}}}}));
  j["spec"]["template"]["spec"]["subdomain"] = "ranks";
  store.create(jobs, "default", j);
  ASSERT_TRUE(eventually([&] { return has_condition(job("dns"), "Complete"); }))
      << job("dns").dump(2) << "\n"
      << json(pods_of("dns")).dump(2);
  for (const auto& p : pods_of("dns"))
    EXPECT_EQ(p["status"]["containerStatuses"][0]["state"]["terminated"]["message"], "127.0.0.1\n");
}

// The operator's probe and workload pods read MASTER_ADDR=<job>-0.<service>; pod 0 may be
// placed after the others (its node full, its image slow): they wait for it, then start
// with its address.
TEST_F(ClusterTest, a_pod_naming_pod_zero_waits_until_pod_zero_is_placed) {
  cluster->add_node(node_spec("n1"));
  store.create(services, "default",
               {{"metadata", {{"name", "ranks"}}}, {"spec", {{"clusterIP", "None"}}}});
  const json rank1 = {
      {"metadata", {{"name", "rank-1"}, {"labels", {{"app", "late"}}}}},
      {"spec",
       {{"restartPolicy", "Never"},
        {"containers",
         {sh_container("echo $MASTER_ADDR > /dev/termination-log",
                       {{"env", {{{"name", "MASTER_ADDR"}, {"value", "w-0.ranks"}}}}})}}}}};
  json rank0 = {{"metadata", {{"name", "rank-0"}, {"labels", {{"app", "late"}}}}},
                {"spec",
                 {{"restartPolicy", "Never"},
                  {"hostname", "w-0"},
                  {"subdomain", "ranks"},
                  {"nodeSelector", {{"pool", "late"}}},  // no such node yet
                  {"containers", {sh_container("true")}}}}};
  store.create(pods, "default", rank1);
  store.create(pods, "default", rank0);
  auto unschedulable = [&] {
    const json st = status_of(store.get(pods, "default", "rank-0"));
    return st.contains("conditions") && st["conditions"][0].value("reason", "") == "Unschedulable";
  };
  ASSERT_TRUE(eventually([&] {
    return unschedulable() &&
           store.get(pods, "default", "rank-1")["spec"].value("nodeName", "") == "n1";
  }));
  // Bound, but its container waits for rank 0's address.
  EXPECT_FALSE(status_of(store.get(pods, "default", "rank-1")).contains("containerStatuses"));

  NodeSpec late = node_spec("n2");
  late.labels = {{"pool", "late"}};
  cluster->add_node(late);
  ASSERT_TRUE(eventually([&] {
    return status_of(store.get(pods, "default", "rank-1")).value("phase", "") == "Succeeded";
  })) << store.get(pods, "default", "rank-1").dump(2);
  EXPECT_EQ(store.get(pods, "default", "rank-0")["spec"]["nodeName"], "n2");
  EXPECT_EQ(store.get(pods, "default",
                      "rank-1")["status"]["containerStatuses"][0]["state"]["terminated"]["message"],
            "127.0.0.1\n");
}

TEST_F(ClusterTest, a_stopped_node_fails_its_pods_and_the_replacement_cannot_go_there) {
  // One GPU per node and per pod: the two pods land on different nodes.
  cluster->add_node(node_spec("n1", 1));
  cluster->add_node(node_spec("n2", 1));
  store.create(jobs, "default",
               indexed_job("lose", 2,
                           sh_container("echo $$$$ > pid; exec sleep 30",
                                        {{"resources", {{"limits", {{"nvidia.com/gpu", 1}}}}}})));
  json victim;
  ASSERT_TRUE(eventually([&] {
    int running = 0;
    victim = nullptr;
    for (const auto& p : pods_of("lose"))
      if (status_of(p).value("phase", "") == "Running") {
        ++running;
        if (p["spec"]["nodeName"] == "n2") victim = p;
      }
    return running == 2 && !victim.is_null();
  }));
  const pid_t pid = read_pid(pod_dir(victim) + "/pid");
  ASSERT_GT(pid, 0);
  cluster->stop_node("n2");
  const std::string name = victim["metadata"]["name"];
  ASSERT_TRUE(eventually(
      [&] { return status_of(store.get(pods, "default", name)).value("phase", "") == "Failed"; }));
  const json failed = store.get(pods, "default", name);
  EXPECT_EQ(failed["status"]["reason"], "NodeLost");
  EXPECT_TRUE(has_condition(failed, "DisruptionTarget", "DeletionByTaintManager"));
  EXPECT_EQ(failed["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"], 137);
  EXPECT_TRUE(eventually([&] { return kill(pid, 0) != 0 && errno == ESRCH; }));
  // The Job counts the failure and makes a replacement, which fits nowhere now.
  std::string message;
  EXPECT_TRUE(eventually([&] {
    for (const auto& p : pods_of("lose"))
      for (const auto& cond : status_of(p).value("conditions", json::array()))
        if (cond["type"] == "PodScheduled" && cond["status"] == "False") message = cond["message"];
    return !message.empty() && status_of(job("lose")).value("failed", 0) == 1;
  })) << json(pods_of("lose")).dump(1);
  EXPECT_EQ(message,
            "0/2 nodes are available: 1 Insufficient nvidia.com/gpu, 1 node(s) had untolerated "
            "taint {node.kubernetes.io/unreachable: }.");
}

TEST_F(ClusterTest, on_failure_restarts_the_container_in_place_and_counts_it) {
  cluster->add_node(node_spec("n1"));
  store.create(pods, "default",
               {{"metadata", {{"name", "flaky"}}},
                {"spec",
                 {{"restartPolicy", "OnFailure"},
                  {"containers",
                   {sh_container("test -f marker || { touch marker; exit 1; }; "
                                 "echo second > /dev/termination-log")}}}}});
  ASSERT_TRUE(eventually([&] {
    return status_of(store.get(pods, "default", "flaky")).value("phase", "") == "Succeeded";
  }));
  const json cs = store.get(pods, "default", "flaky")["status"]["containerStatuses"][0];
  EXPECT_EQ(cs["restartCount"], 1);
  EXPECT_EQ(cs["lastState"]["terminated"]["exitCode"], 1);
  EXPECT_EQ(cs["state"]["terminated"]["message"], "second\n");
}

TEST_F(ClusterTest, active_deadline_fails_the_job_and_ttl_deletes_it_with_its_pods) {
  cluster->add_node(node_spec("n1"));
  json j = indexed_job("slow", 1, sh_container("exec sleep 30"));
  j["spec"]["activeDeadlineSeconds"] = 1;
  j["spec"]["ttlSecondsAfterFinished"] = 0;
  std::mutex mu;
  std::vector<std::string> reasons;
  WatchRequest w;
  w.from = store.resource_version();
  w.deliver = [&](const WatchEvent& e) {
    for (const auto& c :
         e.object.value("status", json::object()).value("conditions", json::array()))
      if (c["type"] == "Failed") {
        std::lock_guard<std::mutex> lock(mu);
        reasons.push_back(c["reason"]);
      }
    return true;
  };
  const uint64_t id = store.watch(jobs, std::move(w));
  store.create(jobs, "default", j);
  // Failed after about a second, then deleted at once (TTL 0), its pod with it.
  EXPECT_TRUE(eventually([&] { return !exists(jobs, "slow"); }, 5s));
  EXPECT_TRUE(pods_of("slow").empty());
  store.unwatch(id);
  std::lock_guard<std::mutex> lock(mu);
  ASSERT_FALSE(reasons.empty());
  EXPECT_EQ(reasons.front(), "DeadlineExceeded");
}

// The chart's pods as a cluster runs them: an image-only container runs the image's
// mapped entrypoint with its args; a Secret volume and the service-account volume are
// files in the pod's directory, reached through the mount paths named in args and env;
// KUBERNETES_SERVICE_HOST/PORT and the account's token are the API server's.
class ImagePodTest : public ClusterTest {
 protected:
  void SetUp() override {
    KubeletOptions options;
    options.image_entrypoints = {{"tools/shell", "/bin/sh"}};
    options.api_host = "127.0.0.1";
    options.api_port = "6443";
    options.api_ca_pem = "CA PEM";
    options.service_account_tokens = {{"default/runner", "runner-token"}};
    options.mount_namespaces = geteuid() == 0;
    cluster = std::make_unique<SimCluster>(store, options);
    cluster->start();
    cluster->add_node(node_spec("n1"));
    store.create(*store.find_resource("", "v1", "secrets"), "default",
                 {{"metadata", {{"name", "tls"}}}, {"data", {{"tls.crt", "Q0VSVA=="}}}});
  }
  // The pod's container's termination message once it succeeded.
  std::string run(const json& container, const std::string& account = "runner") {
    json pod = {{"metadata", {{"name", "p"}, {"labels", {{"app", "img"}}}}},
                {"spec",
                 {{"restartPolicy", "Never"},
                  {"serviceAccountName", account},
                  {"containers", {container}},
                  {"volumes", {{{"name", "tls"}, {"secret", {{"secretName", "tls"}}}}}}}}};
    store.create(pods, "default", pod);
    std::string message;
    EXPECT_TRUE(eventually([&] {
      const json p = store.get(pods, "default", "p");
      if (status_of(p).value("phase", "") != "Succeeded") return false;
      message = p["status"]["containerStatuses"][0]["state"]["terminated"].value("message", "");
      return true;
    })) << json(pods_of("img")).dump(2);
    return message;
  }
};

TEST_F(ImagePodTest, an_image_only_container_reads_its_volumes_through_the_mount_paths) {
  const json container = {
      {"name", "main"},
      {"image", "tools/shell:1.0"},
      {"args",
       {"-c",
        "{ cat /etc/app/tls/tls.crt; echo; cat $SA_DIR/token; echo; cat $SA_DIR/namespace; echo; "
        "cat $SA_DIR/ca.crt; echo; echo $KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT; } > "
        "/dev/termination-log"}},
      {"env", {{{"name", "SA_DIR"}, {"value", "/var/run/secrets/kubernetes.io/serviceaccount"}}}},
      {"volumeMounts", {{{"name", "tls"}, {"mountPath", "/etc/app/tls"}, {"readOnly", true}}}}};
  EXPECT_EQ(run(container), "CERT\nrunner-token\ndefault\nCA PEM\n127.0.0.1:6443\n");
}

TEST_F(ImagePodTest, an_account_the_sim_has_no_token_for_gets_an_empty_one) {
  const json container = {{"name", "main"},
                          {"image", "tools/shell"},
                          {"args",
                           {"-c",
                            "wc -c < /var/run/secrets/kubernetes.io/serviceaccount/token > "
                            "/dev/termination-log"}}};
  EXPECT_EQ(run(container, "stranger"), "0\n");
}

// As root the pod has a private mount namespace with the token at its fixed path, which
// in-cluster clients read without it appearing in args or env.
TEST_F(ImagePodTest, the_token_is_at_its_fixed_path_in_the_pods_mount_namespace) {
  if (geteuid() != 0) GTEST_SKIP() << "mount namespaces need root";
  const json container = {
      {"name", "main"},
      {"image", "tools/shell"},
      // Split so that no path mapping applies: only the bind mount can serve it.
      {"args",
       {"-c",
        "d=/var/run/secrets/kubernetes.io; cat $d/service\"\"account/token > "
        "/dev/termination-log"}}};
  EXPECT_EQ(run(container), "runner-token");
}

TEST_F(ImagePodTest, an_unmapped_image_without_command_cannot_start) {
  store.create(
      pods, "default",
      {{"metadata", {{"name", "p"}}},
       {"spec",
        {{"restartPolicy", "Never"}, {"containers", {{{"name", "main"}, {"image", "nginx:1"}}}}}}});
  json terminated;
  ASSERT_TRUE(eventually([&] {
    terminated =
        status_of(store.get(pods, "default", "p")).value("containerStatuses", json::array());
    return !terminated.empty() && terminated[0]["state"].contains("terminated");
  }));
  EXPECT_EQ(terminated[0]["state"]["terminated"]["reason"], "StartError");
  EXPECT_NE(
      terminated[0]["state"]["terminated"]["message"].get<std::string>().find("--image-entrypoint"),
      std::string::npos);
}

// Under restartPolicy Always (a Deployment's pods) a container that cannot start waits in
// CrashLoopBackOff and the pod stays Running, as with a real kubelet: a Failed pod would
// make its ReplicaSet replace it in a tight loop.
TEST_F(ImagePodTest, an_always_restarting_pod_that_cannot_start_waits_instead_of_failing) {
  store.create(pods, "default",
               {{"metadata", {{"name", "p"}}},
                {"spec", {{"containers", {{{"name", "main"}, {"image", "nginx:1"}}}}}}});
  json status;
  ASSERT_TRUE(eventually([&] {
    status = status_of(store.get(pods, "default", "p"));
    return !status.value("containerStatuses", json::array()).empty();
  }));
  EXPECT_EQ(status["phase"], "Running");
  const json& c = status["containerStatuses"][0];
  EXPECT_EQ(c["state"]["waiting"]["reason"], "CrashLoopBackOff") << c.dump(2);
  EXPECT_EQ(c["lastState"]["terminated"]["reason"], "StartError");
  EXPECT_EQ(c["ready"], false);
  EXPECT_FALSE(has_condition(store.get(pods, "default", "p"), "Ready"));
}

// A port free on 127.0.0.1 now (bound to port 0, then released) for a server a pod starts.
uint16_t free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

// A readinessProbe decides the pod's Ready condition, and a Service's selector then leads
// to the ready pod at its named target port (what the sim's webhook calls dial).
TEST_F(ClusterTest, a_readiness_probe_makes_the_pod_ready_and_a_service_endpoint) {
  if (::access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "no python3 to serve HTTP";
  cluster->add_node(node_spec("n1"));
  const uint16_t port = free_port();
  json service_spec = {{"selector", {{"app", "web"}}},
                       {"ports", json::array({{{"port", 80}, {"targetPort", "http"}}})}};
  store.create(services, "default", {{"metadata", {{"name", "web"}}}, {"spec", service_spec}});
  // Serves only after a second, so the pod is Running but not Ready first.
  json extra = {
      {"ports", json::array({{{"name", "http"}, {"containerPort", port}}})},
      {"readinessProbe", {{"httpGet", {{"path", "/"}, {"port", "http"}}}, {"periodSeconds", 1}}}};
  json container = sh_container(
      "sleep 1; exec python3 -m http.server " + std::to_string(port) + " --bind 127.0.0.1", extra);
  json pod = {{"metadata", {{"name", "web-1"}, {"labels", {{"app", "web"}}}}},
              {"spec", {{"containers", json::array({container})}}}};
  store.create(pods, "default", pod);
  ServiceDirectory directory(&store);
  ASSERT_TRUE(eventually([&] {
    return status_of(store.get(pods, "default", "web-1")).value("phase", "") == "Running";
  }));
  EXPECT_FALSE(has_condition(store.get(pods, "default", "web-1"), "Ready"));
  EXPECT_FALSE(directory.find("web", "default", 80).has_value());
  ASSERT_TRUE(eventually([&] {
    return has_condition(store.get(pods, "default", "web-1"), "Ready");
  })) << store.get(pods, "default", "web-1").dump(2);
  const auto endpoint = directory.find("web", "default", 80);
  ASSERT_TRUE(endpoint.has_value());
  EXPECT_EQ(endpoint->host, "127.0.0.1");
  EXPECT_EQ(endpoint->port, port);
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::sim
