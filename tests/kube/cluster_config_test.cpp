// Kubeconfig and in-cluster loading: what is read, and every refusal naming its field.
#include "kube/cluster_config.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>

#include "core/field_errors.h"

namespace commgate::kube {
namespace COMMGATE_TEST_UNIT {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    path_ = fs::temp_directory_path() /
            ("commgate-kube-" + std::to_string(::getpid()) + "-" + std::to_string(counter_++));
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  fs::path write(const std::string& name, const std::string& text) const {
    fs::create_directories((path_ / name).parent_path());
    std::ofstream(path_ / name) << text;
    return path_ / name;
  }
  const fs::path& path() const { return path_; }

 private:
  static inline int counter_ = 0;
  fs::path path_;
};

// Sets (or unsets, with nullopt) an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, std::optional<std::string> value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value)
      ::setenv(name, value->c_str(), 1);
    else
      ::unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_)
      ::setenv(name_, old_->c_str(), 1);
    else
      ::unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// "-----BEGIN CERTIFICATE-----\nCA\n" and friends, base64: the loader does not parse PEM
// (the client does, at construction), so any bytes show that decoding happened.
constexpr const char* kCaData = "Q0EtUEVN";        // "CA-PEM"
constexpr const char* kCertData = "Q0VSVC1QRU0=";  // "CERT-PEM"
constexpr const char* kKeyData = "S0VZLVBFTQ==";   // "KEY-PEM"

std::string kubeconfig(const std::string& users_extra = "", const std::string& cluster_extra = "",
                       const std::string& current = "ctx-b") {
  return R"(apiVersion: v1
kind: Config
current-context: )" +
         current + R"(
clusters:
- name: a
  cluster:
    server: https://a.example:6443
- name: b
  cluster:
    server: https://10.0.0.1:6443/
    certificate-authority-data: )" +
         kCaData + cluster_extra + R"(
contexts:
- name: ctx-a
  context: {cluster: a, user: alice}
- name: ctx-b
  context: {cluster: b, user: bob, namespace: research}
users:
- name: alice
  user: {token: alice-token}
- name: bob
  user:
    client-certificate-data: )" +
         kCertData + R"(
    client-key-data: )" +
         kKeyData + users_extra + "\n";
}

TEST(Kubeconfig, ReadsTheCurrentContextsClusterAndUser) {
  ClusterConfig c = parse_kubeconfig(kubeconfig(), "");
  EXPECT_EQ(c.server, "https://10.0.0.1:6443") << "trailing slash dropped";
  EXPECT_EQ(c.ca_pem, "CA-PEM");
  EXPECT_EQ(c.client_cert_pem, "CERT-PEM");
  EXPECT_EQ(c.client_key_pem, "KEY-PEM");
  EXPECT_EQ(c.default_namespace, "research");
  EXPECT_TRUE(c.token.empty());
}

TEST(Kubeconfig, AGivenContextOverridesTheCurrentOne) {
  ClusterConfig c = parse_kubeconfig(kubeconfig(), "", "ctx-a");
  EXPECT_EQ(c.server, "https://a.example:6443");
  EXPECT_EQ(c.token.current(), "alice-token");
  EXPECT_EQ(c.default_namespace, "default");
  EXPECT_EQ(c.ca_pem, "") << "no CA: the system's trust store";
}

struct BadCase {
  const char* name;
  std::string text;
  std::string context;
  std::string want;  // a line of the error
};

TEST(Kubeconfig, RefusalsNameTheField) {
  const std::vector<BadCase> cases = {
      {"token twice", kubeconfig("\n    token: x\n    tokenFile: /t"), "",
       "users[1].user.token: set either token or tokenFile, not both"},
      {"key not base64", std::string(kubeconfig()).replace(kubeconfig().find(kKeyData), 12, "abc*"),
       "", "users[1].user.client-key-data: not valid base64"},
      {"unknown context", kubeconfig(), "x", "contexts: no context named \"x\""},
      {"unknown current context", kubeconfig("", "", "nope"), "",
       "current-context: no context named \"nope\""},
      {"unknown cluster",
       std::string(kubeconfig()).replace(kubeconfig().find("cluster: b"), 10, "cluster: z"), "",
       "contexts[1].context.cluster: no cluster named \"z\""},
      {"insecure", kubeconfig("", "\n    insecure-skip-tls-verify: true"), "",
       "clusters[1].cluster.insecure-skip-tls-verify: not supported"},
      {"exec plugin", kubeconfig("\n    exec: {command: aws}"), "",
       "users[1].user.exec: not supported"},
      {"plain http",
       std::string(kubeconfig()).replace(kubeconfig().find("https://10"), 10, "http://10"), "",
       "clusters[1].cluster.server: must be an https:// URL"},
      {"no current context", "apiVersion: v1\nkind: Config\nclusters: []\n", "",
       "current-context: is not set"},
      {"ca twice", kubeconfig("", "\n    certificate-authority: ca.crt"), "",
       "clusters[1].cluster.certificate-authority: set either"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    try {
      parse_kubeconfig(c.text, "", c.context);
      ADD_FAILURE() << "accepted";
    } catch (const ValidationError& e) {
      EXPECT_NE(std::string(e.what()).find(c.want), std::string::npos) << e.what();
    }
  }
}

TEST(Kubeconfig, FilesAreRelativeToTheKubeconfigsDirectory) {
  TempDir dir;
  dir.write("pki/ca.crt", "CA FROM FILE");
  dir.write("token", "  file-token\n");
  const auto path = dir.write("conf/config", R"(apiVersion: v1
kind: Config
current-context: c
clusters:
- name: k
  cluster: {server: "https://127.0.0.1:1", certificate-authority: ../pki/ca.crt}
contexts:
- name: c
  context: {cluster: k, user: u}
users:
- name: u
  user: {tokenFile: ../token}
)");
  ClusterConfig c = load_kubeconfig(path.string());
  EXPECT_EQ(c.ca_pem, "CA FROM FILE");
  EXPECT_EQ(c.token.current(), "file-token");
  EXPECT_EQ(c.token.file(), (dir.path() / "conf" / "../token").string());
  EXPECT_NE(c.source.find(path.string()), std::string::npos) << c.source;
}

TEST(Kubeconfig, AMissingFileNamesTheField) {
  const std::string text = R"(current-context: c
clusters:
- name: k
  cluster: {server: "https://h", certificate-authority: /nonexistent/ca.crt}
contexts:
- {name: c, context: {cluster: k}}
)";
  try {
    parse_kubeconfig(text, "");
    FAIL() << "accepted";
  } catch (const ValidationError& e) {
    EXPECT_NE(std::string(e.what()).find("clusters[0].cluster.certificate-authority: "
                                         "/nonexistent/ca.crt: cannot read"),
              std::string::npos)
        << e.what();
  }
}

TEST(BearerTokenFile, IsReadAgainAfterAMinute) {
  TempDir dir;
  const auto path = dir.write("token", "one");
  auto now = BearerToken::Clock::now();
  BearerToken t = BearerToken::from_file(path.string(), [&] { return now; });
  EXPECT_EQ(t.current(), "one");
  std::ofstream(path) << "two";
  now += std::chrono::seconds(59);
  EXPECT_EQ(t.current(), "one") << "held for a minute";
  now += std::chrono::seconds(1);
  EXPECT_EQ(t.current(), "two");
  fs::remove(path);
  now += std::chrono::seconds(60);
  EXPECT_EQ(t.current(), "two") << "a file that went keeps the last token";
}

TEST(InCluster, ReadsTheServiceAccountFiles) {
  TempDir dir;
  dir.write("token", "sa-token\n");
  dir.write("ca.crt", "CLUSTER CA");
  dir.write("namespace", "commgate-system");
  ScopedEnv host("KUBERNETES_SERVICE_HOST", "10.96.0.1");
  ScopedEnv port("KUBERNETES_SERVICE_PORT", "443");
  ClusterConfig c = load_in_cluster(dir.path().string());
  EXPECT_EQ(c.server, "https://10.96.0.1:443");
  EXPECT_EQ(c.token.current(), "sa-token");
  EXPECT_EQ(c.token.file(), (dir.path() / "token").string());
  EXPECT_EQ(c.ca_pem, "CLUSTER CA");
  EXPECT_EQ(c.default_namespace, "commgate-system");

  ScopedEnv v6("KUBERNETES_SERVICE_HOST", "fd00::1");
  EXPECT_EQ(load_in_cluster(dir.path().string()).server, "https://[fd00::1]:443");
}

TEST(InCluster, SaysWhatIsMissing) {
  TempDir dir;
  {
    ScopedEnv host("KUBERNETES_SERVICE_HOST", std::nullopt);
    EXPECT_THROW(load_in_cluster(dir.path().string()), std::runtime_error);
  }
  ScopedEnv host("KUBERNETES_SERVICE_HOST", "10.96.0.1");
  ScopedEnv port("KUBERNETES_SERVICE_PORT", "443");
  try {
    load_in_cluster(dir.path().string());
    FAIL() << "loaded without a token";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("token"), std::string::npos) << e.what();
  }
}

TEST(ResolveConfig, FlagThenKubeconfigEnvThenInClusterThenHome) {
  TempDir dir;
  const std::string minimal = R"(current-context: c
clusters: [{name: k, cluster: {server: "https://SERVER"}}]
contexts: [{name: c, context: {cluster: k}}]
)";
  auto conf = [&](const std::string& name, const std::string& server) {
    std::string text = minimal;
    text.replace(text.find("SERVER"), 6, server);
    return dir.write(name, text).string();
  };
  const std::string flag = conf("flag", "flag");
  const std::string env = conf("env", "env");
  conf("home/.kube/config", "home");
  dir.write("sa/token", "t");
  dir.write("sa/ca.crt", "ca");
  ResolveOptions options{(dir.path() / "sa").string(), (dir.path() / "home").string()};

  ScopedEnv kubeconfig_env("KUBECONFIG", "/nonexistent/a:" + env);
  ScopedEnv host("KUBERNETES_SERVICE_HOST", "incluster");
  ScopedEnv port("KUBERNETES_SERVICE_PORT", "443");
  EXPECT_EQ(resolve_config(flag, options).server, "https://flag");
  EXPECT_EQ(resolve_config("", options).server, "https://env");
  {
    ScopedEnv unset("KUBECONFIG", std::nullopt);
    EXPECT_EQ(resolve_config("", options).server, "https://incluster:443");
    ScopedEnv no_host("KUBERNETES_SERVICE_HOST", std::nullopt);
    EXPECT_EQ(resolve_config("", options).server, "https://home");
    fs::remove(dir.path() / "home/.kube/config");
    try {
      resolve_config("", options);
      FAIL() << "resolved with nothing there";
    } catch (const std::runtime_error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("--kubeconfig"), std::string::npos) << what;
      EXPECT_NE(what.find("$KUBECONFIG (not set)"), std::string::npos) << what;
      EXPECT_NE(what.find("KUBERNETES_SERVICE_HOST not set"), std::string::npos) << what;
      EXPECT_NE(what.find(".kube/config (does not exist)"), std::string::npos) << what;
    }
  }
  EXPECT_THROW(resolve_config((dir.path() / "missing").string(), options), std::runtime_error)
      << "a flag that names no file is an error, not a fall-through";
}

}  // namespace
}  // namespace commgate::kube
