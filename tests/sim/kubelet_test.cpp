// The kubelet's pure helpers (sim/kubelet.h): pod DNS names, $(VAR) expansion, fieldRefs.
#include "sim/kubelet.h"

#include <gtest/gtest.h>

namespace commgate::sim {
namespace COMMGATE_TEST_UNIT {

using nlohmann::json;

TEST(PodDnsName, accepts_the_short_and_long_forms_only) {
  struct Case {
    std::string text;
    bool ok;
    std::string ns;
  };
  const Case cases[] = {
      {"probe-0.ranks", true, "team"},
      {"probe-0.ranks.ml", true, "ml"},
      {"probe-0.ranks.ml.svc", true, "ml"},
      {"probe-0.ranks.ml.svc.cluster.local", true, "ml"},
      {"probe-0.ranks.ml.svc.cluster.local.", true, "ml"},
      {"probe-0", false, ""},
      {"probe-0.ranks.ml.pod", false, ""},
      {"probe-0.ranks.ml.svc.cluster", false, ""},
      {"10.0.0.1", false, ""},  // four labels, the fourth not "svc"
      {"Probe.ranks", false, ""},
  };
  for (const auto& c : cases) {
    const auto d = parse_pod_dns_name(c.text, "team");
    EXPECT_EQ(d.has_value(), c.ok) << c.text;
    if (d && c.ok) {
      EXPECT_EQ(d->hostname, "probe-0");
      EXPECT_EQ(d->subdomain, "ranks");
      EXPECT_EQ(d->ns, c.ns) << c.text;
    }
  }
}

TEST(ExpandEnvRefs, table) {
  const std::map<std::string, std::string> env = {{"A", "1"}, {"B", "two"}};
  const std::pair<std::string, std::string> cases[] = {
      {"$(A)", "1"}, {"x$(A)y$(B)", "x1ytwo"}, {"$(C)", "$(C)"},      {"$$(A)", "$(A)"},
      {"$$", "$"},   {"$(A", "$(A"},           {"no refs", "no refs"}};
  for (const auto& [in, want] : cases) EXPECT_EQ(expand_env_refs(in, env), want) << in;
}

TEST(FieldRefValue, table) {
  const json pod = {{"metadata",
                     {{"name", "p"},
                      {"namespace", "ns"},
                      {"uid", "u"},
                      {"labels", {{"app", "x"}}},
                      {"annotations", {{"batch.kubernetes.io/job-completion-index", "3"}}}}},
                    {"spec", {{"nodeName", "n1"}}},
                    {"status", {{"podIP", "198.18.0.2"}}}};
  const std::pair<std::string, std::optional<std::string>> cases[] = {
      {"metadata.name", "p"},
      {"metadata.namespace", "ns"},
      {"metadata.uid", "u"},
      {"spec.nodeName", "n1"},
      {"status.podIP", "198.18.0.2"},
      {"metadata.labels['app']", "x"},
      {"metadata.annotations['batch.kubernetes.io/job-completion-index']", "3"},
      {"metadata.annotations['missing']", ""},
      {"spec.containers", std::nullopt}};
  for (const auto& [path, want] : cases) EXPECT_EQ(field_ref_value(pod, path), want) << path;
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::sim

namespace commgate::sim {
namespace COMMGATE_TEST_UNIT {

TEST(ImageRepository, drops_the_tag_and_the_digest_but_not_a_registry_port) {
  const std::pair<std::string, std::string> cases[] = {
      {"commgate/commgate:0.1.0", "commgate/commgate"},
      {"commgate/commgate", "commgate/commgate"},
      {"busybox", "busybox"},
      {"reg.example:5000/team/commgate:1", "reg.example:5000/team/commgate"},
      {"reg.example:5000/team/commgate", "reg.example:5000/team/commgate"},
      {"commgate/commgate@sha256:abcd", "commgate/commgate"},
      {"commgate/commgate:1@sha256:abcd", "commgate/commgate"},
  };
  for (const auto& [image, want] : cases) EXPECT_EQ(image_repository(image), want) << image;
}

TEST(ContainerArgv, runs_the_images_entrypoint_when_it_is_mapped) {
  const std::map<std::string, std::string> images = {{"commgate/commgate", "/b/bin/commgate"}};
  using V = std::vector<std::string>;
  struct Case {
    const char* name;
    nlohmann::json container;
    V want;
  };
  const Case cases[] = {
      {"no_command_runs_the_entrypoint_with_args",
       {{"image", "commgate/commgate:1"}, {"args", {"webhook", "--port=9443"}}},
       {"/b/bin/commgate", "webhook", "--port=9443"}},
      {"a_command_naming_the_entrypoint_runs_it",
       {{"image", "commgate/commgate:1"},
        {"command", {"/usr/local/bin/commgate"}},
        {"args", {"operator"}}},
       {"/b/bin/commgate", "operator"}},
      {"another_command_in_the_image_runs_as_given",
       {{"image", "commgate/commgate:1"}, {"command", {"sh", "-c", "true"}}},
       {"sh", "-c", "true"}},
      {"an_unmapped_image_runs_its_command",
       {{"image", "busybox:1"}, {"command", {"sleep", "1"}}, {"args", {"2"}}},
       {"sleep", "1", "2"}},
      {"an_unmapped_image_without_command_has_nothing_to_run",
       {{"image", "busybox:1"}, {"args", {"x"}}},
       {}},
  };
  for (const auto& c : cases) EXPECT_EQ(container_argv(c.container, images), c.want) << c.name;
}

TEST(MapPaths, replaces_paths_under_a_mount_with_the_pod_local_copy) {
  const std::vector<PathMapping> mounts = {
      {"/etc/commgate/tls", "/pods/p/volumes/tls"},
      {"/etc/commgate", "/pods/p/volumes/conf"},
      {"/var/run/secrets/kubernetes.io/serviceaccount/", "/pods/p/serviceaccount"}};
  const std::pair<std::string, std::string> cases[] = {
      {"--tls-cert-file=/etc/commgate/tls/tls.crt", "--tls-cert-file=/pods/p/volumes/tls/tls.crt"},
      {"/etc/commgate/tls", "/pods/p/volumes/tls"},
      {"/etc/commgate/config.yaml", "/pods/p/volumes/conf/config.yaml"},
      {"/etc/commgate-other/x", "/etc/commgate-other/x"},
      {"/opt/etc/commgate/x", "/opt/etc/commgate/x"},
      {"a:/etc/commgate/tls/ca.crt,/etc/commgate/x",
       "a:/pods/p/volumes/tls/ca.crt,/pods/p/volumes/conf/x"},
      {"/var/run/secrets/kubernetes.io/serviceaccount/token", "/pods/p/serviceaccount/token"},
      {"no paths here", "no paths here"},
  };
  for (const auto& [text, want] : cases) EXPECT_EQ(map_paths(text, mounts), want) << text;
}

TEST(VolumeFiles, fills_secret_config_map_projected_and_downward_volumes) {
  const nlohmann::json pod = {{"metadata", {{"name", "p"}, {"namespace", "ns"}}}};
  const std::map<std::string, nlohmann::json> objects = {
      {"secrets/tls",
       {{"data", {{"tls.crt", "Y2VydA=="}, {"tls.key", "a2V5"}}},
        {"stringData", {{"x", "plain"}}}}},
      {"configmaps/conf", {{"data", {{"a.yaml", "a: 1"}}}, {"binaryData", {{"b", "Yg=="}}}}}};
  VolumeSources sources;
  sources.pod = &pod;
  sources.token = "sa-token";
  sources.ca_pem = "CA";
  sources.find = [&](const std::string& resource,
                     const std::string& name) -> std::optional<nlohmann::json> {
    auto it = objects.find(resource + "/" + name);
    if (it == objects.end()) return std::nullopt;
    return it->second;
  };
  using Files = std::map<std::string, std::string>;
  struct Case {
    const char* name;
    nlohmann::json volume;
    std::optional<Files> want;
  };
  const Case cases[] = {
      {"a_secret_decoded",
       {{"secret", {{"secretName", "tls"}}}},
       Files{{"tls.crt", "cert"}, {"tls.key", "key"}, {"x", "plain"}}},
      {"a_secrets_items_only",
       {{"secret",
         {{"secretName", "tls"}, {"items", {{{"key", "tls.key"}, {"path", "k/key.pem"}}}}}}},
       Files{{"k/key.pem", "key"}}},
      {"a_missing_secret_waits", {{"secret", {{"secretName", "nope"}}}}, std::nullopt},
      {"a_missing_optional_secret_is_empty",
       {{"secret", {{"secretName", "nope"}, {"optional", true}}}},
       Files{}},
      {"a_config_map", {{"configMap", {{"name", "conf"}}}}, Files{{"a.yaml", "a: 1"}, {"b", "b"}}},
      {"emptydir_is_empty", {{"emptyDir", nlohmann::json::object()}}, Files{}},
      {"the_kube_api_access_projection",
       {{"projected",
         {{"sources",
           {{{"serviceAccountToken", {{"path", "token"}, {"expirationSeconds", 3607}}}},
            {{"configMap",
              {{"name", "kube-root-ca.crt"},
               {"items", {{{"key", "ca.crt"}, {"path", "ca.crt"}}}}}}},
            {{"downwardAPI",
              {{"items",
                {{{"path", "namespace"},
                  {"fieldRef",
                   {{"apiVersion", "v1"}, {"fieldPath", "metadata.namespace"}}}}}}}}}}}}}},
       Files{{"token", "sa-token"}, {"ca.crt", "CA"}, {"namespace", "ns"}}},
  };
  for (const auto& c : cases) EXPECT_EQ(volume_files(c.volume, sources), c.want) << c.name;
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::sim
