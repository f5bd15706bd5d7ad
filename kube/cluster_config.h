// Where the Kubernetes API is and how to authenticate to it: from a kubeconfig file, from
// the pod's service account (in-cluster), or resolved as kubectl and client-go do.
//
// Supported: one cluster, user and context picked by name (current-context unless one is
// given); certificate-authority-data or a certificate-authority file; token or tokenFile;
// client-certificate(-data) and client-key(-data). File paths are relative to the
// kubeconfig's directory. Refused with an error naming the field: insecure-skip-tls-verify
// (the client trusts only the cluster's CA, DESIGN.md), exec and auth-provider plugins,
// username/password, a server that is not https. $KUBECONFIG lists are not merged: the
// first file that exists is used.
#pragma once

#include <string>
#include <vector>

#include "kube/bearer_token.h"

namespace commgate::kube {

struct ClusterConfig {
  std::string server;                           // "https://host:port", no trailing slash
  std::string ca_pem;                           // "": the system's trust store
  BearerToken token;                            // fixed or re-read from a file
  std::string client_cert_pem, client_key_pem;  // both or neither
  std::string default_namespace = "default";
  std::string source;  // where this came from, for messages ("kubeconfig /x (context c)")
};

constexpr const char* kServiceAccountRoot = "/var/run/secrets/kubernetes.io/serviceaccount";

// Throws ValidationError (core/field_errors.h) naming every field that is wrong, e.g.
// `users[1].user.client-key-data: not valid base64`, and std::runtime_error when the file
// cannot be read or is not YAML.
ClusterConfig load_kubeconfig(const std::string& path, const std::string& context = "");
// The same from text; relative paths resolve against `base_dir`.
ClusterConfig parse_kubeconfig(const std::string& text, const std::string& base_dir,
                               const std::string& context = "", const std::string& what = "");

// From KUBERNETES_SERVICE_HOST/PORT and the service-account files under `root` (token,
// ca.crt, namespace). Throws std::runtime_error naming what is missing.
ClusterConfig load_in_cluster(const std::string& root = kServiceAccountRoot);

struct ResolveOptions {
  std::string in_cluster_root = kServiceAccountRoot;
  std::string home;  // "": $HOME
};
// The --kubeconfig flag, else $KUBECONFIG, else in-cluster (when KUBERNETES_SERVICE_HOST
// is set), else ~/.kube/config. A source that is present but broken is an error (never a
// silent fall-through); when none is present the error lists what was tried.
ClusterConfig resolve_config(const std::string& kubeconfig_flag,
                             const ResolveOptions& options = {});

}  // namespace commgate::kube
