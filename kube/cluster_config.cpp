#include "kube/cluster_config.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "core/base64.h"
#include "core/field_errors.h"
#include "core/object_reader.h"
#include "core/yaml_json.h"

namespace commgate::kube {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot read");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string resolve_path(const std::string& base_dir, const std::string& path) {
  if (path.empty() || fs::path(path).is_absolute() || base_dir.empty()) return path;
  return (fs::path(base_dir) / path).string();
}

// One entry of `clusters`, `users` or `contexts`, found by name.
struct Named {
  std::optional<ObjectReader> body;  // the "cluster"/"user"/"context" object
  std::string path;                  // e.g. "users[1]"
};

Named find_named(ObjectReader& root, const std::string& list, const std::string& body_key,
                 const std::string& name, const std::string& referring_path) {
  FieldErrors& errors = root.errors();
  Named found;
  for (ObjectReader& entry : root.object_list(list)) {
    auto n = entry.string("name", Presence::kRequired);
    if (n && *n == name && !found.body) {
      found.path = entry.path();
      found.body = entry.object(body_key, Presence::kRequired);
    }
  }
  if (!found.body) {
    errors.add(referring_path.empty() ? list : referring_path,
               "no " + body_key + " named \"" + name + "\"");
  }
  return found;
}

// Reads `<key>-data` (base64) or `<key>` (a file); "" when neither is set.
std::string pem_field(ObjectReader& r, const std::string& key, const std::string& base_dir) {
  const auto data = r.string(key + "-data", Presence::kOptional);
  const auto file = r.string(key, Presence::kOptional);
  if (data && file) {
    r.errors().add(r.path_of(key), "set either " + key + " or " + key + "-data, not both");
    return "";
  }
  if (data) {
    try {
      return base64_decode(*data);
    } catch (const std::invalid_argument& e) {
      r.errors().add(r.path_of(key + "-data"), e.what());
      return "";
    }
  }
  if (file) {
    try {
      return read_text(resolve_path(base_dir, *file));
    } catch (const std::exception& e) {
      r.errors().add(r.path_of(key), e.what());
    }
  }
  return "";
}

}  // namespace

ClusterConfig parse_kubeconfig(const std::string& text, const std::string& base_dir,
                               const std::string& context, const std::string& what) {
  const std::string subject = what.empty() ? "kubeconfig" : what;
  const auto docs = yaml_documents_to_json(text);
  if (docs.size() != 1 || !docs[0].is_object())
    throw std::runtime_error(subject + ": must be one YAML mapping");
  FieldErrors errors;
  ObjectReader root(&docs[0], "", errors);
  ClusterConfig config;

  std::string context_name = context;
  std::string context_ref;  // the field that named the context, for "no context named"
  if (context_name.empty()) {
    context_name = root.string("current-context", Presence::kOptional).value_or("");
    context_ref = "current-context";
    if (context_name.empty()) {
      errors.add("current-context", "is not set and no context was given");
      errors.throw_if_any(subject);
    }
  }
  Named ctx = find_named(root, "contexts", "context", context_name, context_ref);
  errors.throw_if_any(subject);
  const auto cluster_name = ctx.body->string("cluster", Presence::kRequired);
  const auto user_name = ctx.body->string("user", Presence::kOptional);
  config.default_namespace = ctx.body->string("namespace", Presence::kOptional).value_or("default");
  errors.throw_if_any(subject);

  Named cluster =
      find_named(root, "clusters", "cluster", *cluster_name, ctx.body->path_of("cluster"));
  if (cluster.body) {
    ObjectReader& c = *cluster.body;
    if (auto server = c.string("server", Presence::kRequired)) {
      config.server = *server;
      while (!config.server.empty() && config.server.back() == '/') config.server.pop_back();
      if (config.server.rfind("https://", 0) != 0)
        errors.add(c.path_of("server"), "must be an https:// URL, got \"" + *server + "\"");
    }
    if (c.boolean("insecure-skip-tls-verify", Presence::kOptional).value_or(false))
      errors.add(c.path_of("insecure-skip-tls-verify"),
                 "not supported: commgate verifies the server against the cluster's CA");
    config.ca_pem = pem_field(c, "certificate-authority", base_dir);
  }

  if (user_name && !user_name->empty()) {
    Named user = find_named(root, "users", "user", *user_name, ctx.body->path_of("user"));
    if (user.body) {
      ObjectReader& u = *user.body;
      for (const char* unsupported : {"exec", "auth-provider", "username", "password"}) {
        if (u.raw(unsupported))
          errors.add(u.path_of(unsupported),
                     "not supported (use token, tokenFile or a client certificate)");
      }
      const auto token = u.string("token", Presence::kOptional);
      const auto token_file = u.string("tokenFile", Presence::kOptional);
      if (token && token_file) {
        errors.add(u.path_of("token"), "set either token or tokenFile, not both");
      } else if (token) {
        config.token = BearerToken::fixed(*token);
      } else if (token_file) {
        try {
          config.token = BearerToken::from_file(resolve_path(base_dir, *token_file));
        } catch (const std::exception& e) {
          errors.add(u.path_of("tokenFile"), e.what());
        }
      }
      config.client_cert_pem = pem_field(u, "client-certificate", base_dir);
      config.client_key_pem = pem_field(u, "client-key", base_dir);
      if (config.client_cert_pem.empty() != config.client_key_pem.empty())
        errors.add(u.path(), "client-certificate and client-key must be given together");
    }
  }
  errors.throw_if_any(subject);
  config.source = subject + " (context \"" + context_name + "\")";
  return config;
}

ClusterConfig load_kubeconfig(const std::string& path, const std::string& context) {
  const std::string text = read_text(path);
  return parse_kubeconfig(text, fs::path(path).parent_path().string(), context,
                          "kubeconfig " + path);
}

ClusterConfig load_in_cluster(const std::string& root) {
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
  if (!host || !*host || !port || !*port)
    throw std::runtime_error(
        "in-cluster config: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be set");
  ClusterConfig config;
  const std::string h = host;
  // An IPv6 service address needs brackets in a URL.
  config.server = "https://" + (h.find(':') != std::string::npos ? "[" + h + "]" : h) + ":" + port;
  config.token = BearerToken::from_file(root + "/token");
  config.ca_pem = read_text(root + "/ca.crt");
  const std::string ns_file = root + "/namespace";
  if (fs::exists(ns_file)) {
    std::string ns = read_token_file(ns_file);
    if (!ns.empty()) config.default_namespace = ns;
  }
  config.source = "in-cluster service account (" + root + ")";
  return config;
}

ClusterConfig resolve_config(const std::string& kubeconfig_flag, const ResolveOptions& options) {
  if (!kubeconfig_flag.empty()) return load_kubeconfig(kubeconfig_flag);
  std::vector<std::string> tried;
  if (const char* env = std::getenv("KUBECONFIG"); env && *env) {
    std::stringstream list(env);
    std::string path;
    while (std::getline(list, path, ':')) {
      if (path.empty()) continue;
      if (fs::exists(path)) return load_kubeconfig(path);
      tried.push_back("$KUBECONFIG file " + path + " (does not exist)");
    }
  } else {
    tried.push_back("$KUBECONFIG (not set)");
  }
  if (const char* host = std::getenv("KUBERNETES_SERVICE_HOST"); host && *host) {
    return load_in_cluster(options.in_cluster_root);
  }
  tried.push_back("in-cluster config (KUBERNETES_SERVICE_HOST not set)");
  std::string home = options.home;
  if (home.empty())
    if (const char* h = std::getenv("HOME")) home = h;
  if (!home.empty()) {
    const std::string path = home + "/.kube/config";
    if (fs::exists(path)) return load_kubeconfig(path);
    tried.push_back(path + " (does not exist)");
  } else {
    tried.push_back("~/.kube/config ($HOME not set)");
  }
  std::string message = "no Kubernetes API configuration found; tried --kubeconfig (not given)";
  for (const auto& t : tried) message += ", " + t;
  throw std::runtime_error(message);
}

}  // namespace commgate::kube
