// The kubelet's container mode (KubeletOptions::podman, commgate-sim --pod-containers) on
// real containers: a pod runs in its image with podman as its securityContext says, writes
// its termination message through the mounted /dev/termination-log, and is removed with
// its pod; a pod the mode cannot run as asked (runAsNonRoot broken, a Localhost seccomp
// profile, a hostPath volume, an image not in the store) waits with the reason in its
// status and no container is ever made for it. Needs root and podman, and the test images
// (the images.FromBinaries.build fixture): skipped with the reason otherwise. Label images.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "sim/cluster.h"
#include "sim/container_runtime.h"
#include "sim/podman.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/wait.h"

namespace commgate::sim {
namespace COMMGATE_TEST_UNIT {

using nlohmann::json;
using namespace std::chrono_literals;

constexpr const char* kProbeImage = "commgate/commgate-probe:test";

class ContainerModeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "podman runs rootful here: root only";
    const auto exists = run_podman(podman_, {"image", "exists", kProbeImage});
    if (exists.exit_code == 127) GTEST_SKIP() << "podman is not installed";
    ASSERT_EQ(exists.exit_code, 0)
        << kProbeImage << " is missing (the images.FromBinaries.build fixture makes it)";
    KubeletOptions options;
    options.podman = podman_;
    options.podman_run_options = default_podman_run_options();
    options.work_dir = (testing::scratch_dir() / "pods").string();
    cluster_ = std::make_unique<SimCluster>(store_, options);
    cluster_->start();
    cluster_->add_node(node_spec("n1"));
  }
  void TearDown() override {
    if (cluster_) cluster_->stop();
  }

  json create(const json& container, const json& pod_extra = json::object()) {
    json pod = {{"metadata", {{"name", "p"}}},
                {"spec", {{"restartPolicy", "Never"}, {"containers", {container}}}}};
    pod["spec"].merge_patch(pod_extra);
    return store_.create(pods_, "default", pod);
  }
  json status() { return store_.get(pods_, "default", "p").value("status", json::object()); }
  // Deletes pod p and waits until it is gone, for the next case's pod of the same name.
  void remove_pod() {
    store_.remove(pods_, "default", "p");
    ASSERT_TRUE(testing::wait_until(
        [&] {
          try {
            store_.get(pods_, "default", "p");
            return false;
          } catch (const std::exception&) {
            return true;
          }
        },
        10s));
  }
  std::string container_name(const json& created) {
    return "k8s_main_p_default_" + created["metadata"]["uid"].get<std::string>();
  }
  bool container_exists(const std::string& name) {
    return run_podman(podman_, {"container", "exists", name}).exit_code == 0;
  }
  // The waiting reason and message of the pod's container once the kubelet wrote one.
  json waiting() {
    json w;
    EXPECT_TRUE(testing::wait_until(
        [&] {
          const json s = status();
          if (!s.contains("containerStatuses")) return false;
          w = s["containerStatuses"][0]["state"].value("waiting", json::object());
          return w.contains("message");
        },
        20s))
        << status().dump(2);
    return w;
  }

  // What the containers wrote (their logs), for a failure's message.
  std::string container_logs() {
    std::string out;
    std::error_code ignored;
    for (const auto& e :
         std::filesystem::recursive_directory_iterator(testing::scratch_dir() / "pods", ignored))
      if (e.path().extension() == ".log") {
        std::ifstream in(e.path());
        out += "== " + e.path().string() + "\n" +
               std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
      }
    return out;
  }

  std::vector<std::string> podman_ = default_podman_command();
  ObjectStore store_;
  ResourceInfo pods_ = *store_.find_resource("", "v1", "pods");
  std::unique_ptr<SimCluster> cluster_;
};

// The probe's image as the operator's probe Jobs run it: no runAsUser (the image's USER,
// 65532, passes runAsNonRoot), a read-only root filesystem, no capabilities; it writes its
// result to /dev/termination-log, which the kubelet mounted writable for that user.
TEST_F(ContainerModeTest, a_pod_runs_in_its_image_as_its_security_context_says) {
  const json container = {{"name", "main"},
                          {"image", kProbeImage},
                          {"args",
                           {"--backend", "gloo", "--params", "1M", "--batch-size", "8",
                            "--max-bytes", "1Mi", "--compute-iters", "2", "--ddp-iters", "2",
                            "--threads", "1", "--timeout", "60", "--quiet"}},
                          {"securityContext",
                           {{"runAsNonRoot", true},
                            {"allowPrivilegeEscalation", false},
                            {"readOnlyRootFilesystem", true},
                            {"capabilities", {{"drop", {"ALL"}}}}}}};
  const json created = create(container, {{"securityContext", {{"fsGroup", 65532}}}});
  json s;
  ASSERT_TRUE(testing::wait_until(
      [&] {
        s = status();
        return s.value("phase", "") == "Succeeded" || s.value("phase", "") == "Failed";
      },
      90s))
      << s.dump(2) << container_logs();
  ASSERT_EQ(s["phase"], "Succeeded") << s.dump(2) << container_logs();
  const json terminated = s["containerStatuses"][0]["state"]["terminated"];
  EXPECT_EQ(terminated["exitCode"], 0);
  // The probe's compact result, written by user 65532 through the mount.
  const json result = json::parse(terminated.value("message", "null"), nullptr, false);
  ASSERT_TRUE(result.is_object()) << terminated.dump(2);
  EXPECT_EQ(result["world"]["nodes"], 1) << result.dump(2);
  // --rm: gone with its exit, nothing left behind.
  EXPECT_FALSE(container_exists(container_name(created)));
}

TEST_F(ContainerModeTest, a_deleted_pods_container_is_removed_even_when_it_ignores_sigterm) {
  // A long probe; as PID 1 without a SIGTERM handler it outlives the grace period.
  const json container = {{"name", "main"},
                          {"image", kProbeImage},
                          {"args", {"--params", "1M", "--compute-iters", "100000", "--quiet"}}};
  const json created = create(container, {{"terminationGracePeriodSeconds", 1}});
  const std::string name = container_name(created);
  // Running (not only created): the SIGTERM reaches the probe, which ignores it, and the
  // kill after the grace period has to remove the container.
  ASSERT_TRUE(testing::wait_until(
      [&] {
        const auto state = run_podman(podman_, {"inspect", "--format", "{{.State.Running}}", name});
        return state.output.rfind("true", 0) == 0;
      },
      30s))
      << status().dump(2);
  store_.remove(pods_, "default", "p");
  EXPECT_TRUE(testing::wait_until([&] { return !container_exists(name); }, 20s))
      << name << " still exists";
}

TEST_F(ContainerModeTest, a_pod_it_cannot_run_as_asked_waits_with_the_reason) {
  struct Case {
    std::string name;
    json container_security, pod_extra;
    std::string reason, message;
  };
  const Case cases[] = {
      {"runAsNonRoot with runAsUser 0",
       {{"runAsNonRoot", true}, {"runAsUser", 0}},
       json::object(),
       "CreateContainerConfigError",
       "container's runAsUser breaks non-root policy (pod: \"p_default("},
      {"a Localhost seccomp profile",
       {{"seccompProfile", {{"type", "Localhost"}, {"localhostProfile", "audit.json"}}}},
       json::object(),
       "CreateContainerConfigError",
       "seccompProfile of type Localhost (audit.json) for container main"},
      {"a hostPath volume",
       json::object(),
       {{"volumes", {{{"name", "host"}, {"hostPath", {{"path", "/etc"}}}}}}},
       "CreateContainerConfigError",
       "volume host: commgate-sim's container mode mounts secret, configMap"},
  };
  for (const auto& c : cases) {
    json container = {{"name", "main"}, {"image", kProbeImage}};
    if (!c.container_security.empty()) container["securityContext"] = c.container_security;
    const json created = create(container, c.pod_extra);
    const json w = waiting();
    EXPECT_EQ(w.value("reason", ""), c.reason) << c.name << ": " << w.dump();
    EXPECT_NE(w.value("message", "").find(c.message), std::string::npos)
        << c.name << ": " << w.dump();
    EXPECT_EQ(status().value("phase", ""), "Pending") << c.name;
    EXPECT_FALSE(container_exists(container_name(created))) << c.name << ": ran another way";
    // The kubelet's Warning Event says it too (what `kubectl describe pod` shows).
    bool event = false;
    for (const auto& e :
         store_.list(*store_.find_resource("", "v1", "events"), "default", {}).items)
      event = event || (e["involvedObject"].value("uid", "") == created["metadata"]["uid"] &&
                        e.value("reason", "") == "Failed" && e.value("type", "") == "Warning" &&
                        e.value("message", "").find(c.message) != std::string::npos);
    EXPECT_TRUE(event) << c.name;
    ASSERT_NO_FATAL_FAILURE(remove_pod());
  }
}

// A commgate-sim killed with SIGKILL never removed its containers: the next one does, and
// leaves a living one's alone.
TEST_F(ContainerModeTest, a_dead_sims_containers_are_removed_when_the_next_one_starts) {
  const pid_t dead = fork();
  if (dead == 0) _exit(0);
  ASSERT_GT(dead, 0);
  waitpid(dead, nullptr, 0);
  const std::string orphan = "commgate-orphan-test-" + std::to_string(getpid());
  const std::string alive = "commgate-alive-test-" + std::to_string(getpid());
  for (const auto& [name, owner] : {std::pair{orphan, dead}, std::pair{alive, getpid()}}) {
    std::vector<std::string> args = {
        "run", "-d",      "--name",
        name,  "--label", std::string(kOwnerLabel) + "=" + std::to_string(owner)};
    for (const auto& o : default_podman_run_options()) args.push_back(o);
    for (const char* a : {kProbeImage, "--params", "1M", "--compute-iters", "100000", "--quiet"})
      args.emplace_back(a);
    ASSERT_EQ(run_podman(podman_, args).exit_code, 0) << name;
  }
  KubeletOptions options;
  options.podman = podman_;
  SimCluster next(store_, options);
  next.start();
  EXPECT_FALSE(container_exists(orphan));
  EXPECT_TRUE(container_exists(alive)) << "a living commgate-sim's container was removed";
  next.stop();
  podman_remove(podman_, {alive});
}

TEST_F(ContainerModeTest, an_image_that_is_not_in_the_store_is_never_pulled) {
  create({{"name", "main"}, {"image", "registry.invalid/none:1"}, {"imagePullPolicy", "Never"}});
  json w = waiting();
  EXPECT_EQ(w.value("reason", ""), "ErrImageNeverPull") << w.dump();
  EXPECT_EQ(w.value("message", ""),
            "Container image \"registry.invalid/none:1\" is not present with pull policy of Never");
  ASSERT_NO_FATAL_FAILURE(remove_pod());
  create({{"name", "main"}, {"image", "registry.invalid/none:1"}});
  w = waiting();
  EXPECT_EQ(w.value("reason", ""), "ErrImagePull") << w.dump();
  EXPECT_NE(w.value("message", "").find("commgate-sim pulls no images"), std::string::npos);
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::sim
