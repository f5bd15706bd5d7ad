#include "cli/webhook_command.h"

#include <pthread.h>
#include <signal.h>

#include <chrono>
#include <iostream>
#include <memory>
#include <optional>
#include <stdexcept>
#include <thread>

#include "core/log.h"
#include "core/quantity.h"
#include "kube/api_client.h"
#include "kube/cluster_config.h"
#include "server/container_limits.h"
#include "server/record_signer.h"
#include "webhook/file_policy_source.h"
#include "webhook/kube_policy_source.h"
#include "webhook/webhook_server.h"

namespace commgate {
namespace {

constexpr const char* kUsage =
    R"(Usage: commgate webhook --tls-cert-file FILE --tls-private-key-file FILE [options]

Serves the admission webhook (POST /mutate, POST /validate, GET /healthz, /readyz,
/metrics) over HTTPS until SIGTERM. The certificate and key are reloaded when they change.

Policies and profiles come from the Kubernetes API (CommPolicies, CommProfiles and
Namespace labels, watched) unless --policy-dir or --profile-dir is given: then from
those manifest files only, and no API server is needed.

Options:
  --port N                        port to listen on (default 9443; 0: any free port)
  --address A                     address to listen on (default 0.0.0.0)
  --tls-cert-file FILE            PEM certificate chain (required)
  --tls-private-key-file FILE     PEM private key (required)
  --policy-dir DIR                CommPolicy (and Namespace) manifests, reloaded on change
  --profile-dir DIR               CommProfile manifests, reloaded on change
  --kubeconfig FILE               the API server to watch (default: $KUBECONFIG, then the
                                  in-cluster service account, then ~/.kube/config)
  --operator-service-account NAME the operator's user name (default
                                  system:serviceaccount:commgate-system:commgate-operator)
  --workload-gate                 the webhook configuration sends Job, CronJob, Pod,
                                  JobSet and PyTorchJob writes here (the workload gate of
                                  CommPolicy spec.unmanagedWorkloads); without it a policy
                                  that sets the switch is admitted with a warning
  --workload-controller NS/NAME   a controller's service account whose writes of a child
                                  (a JobSet's Jobs, a PyTorchJob's pods) are left to the
                                  checked parent; repeatable (kube-system's are always)
  --kueue                         watch Kueue's LocalQueues, ClusterQueues and
                                  AdmissionChecks: under spec.unmanagedWorkloads deny, a
                                  suspended Job, JobSet or PyTorchJob queued to a LocalQueue
                                  whose ClusterQueue runs commgate's admission check is let
                                  through (commgate decides it through its Workload);
                                  Kueue's controller must be a --workload-controller, the
                                  one that may unsuspend it (docs/kueue.md)
  --log-format text|json          log lines on stderr as text (default) or one JSON
                                  object per line (time, level, msg and fields)
  --memory-limit QUANTITY         the memory the webhook must stay under (e.g. 256Mi;
                                  default: its container's cgroup limit, none outside
                                  one): sizes the connection cap and the request bodies
                                  in flight (docs/security.md); its CPU quota sizes the
                                  threads
  --decision-key-file FILE        the key (at least 32 bytes) that signs decision records;
                                  the operator must have the same one. Without it records
                                  are not signed, and a record a user wrote or copied is
                                  held to as if commgate had written it (docs/security.md)
)";

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Options {
  bool help = false;
  server::ServerOptions server;
  webhook::WebhookConfig config;
  std::string policy_dir, profile_dir;
  std::string kubeconfig;
  std::string log_format = "text";
  std::string decision_key_file;
  std::optional<uint64_t> memory_limit;  // --memory-limit; else the cgroup's
  bool kueue = false;                    // --kueue
  bool from_files() const { return !policy_dir.empty() || !profile_dir.empty(); }
};

Options parse_args(const std::vector<std::string>& args) {
  Options o;
  o.server.address = "0.0.0.0";
  o.server.port = 9443;
  server::TlsFiles tls;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto is = [&](const char* flag) {
      return a == flag || a.rfind(std::string(flag) + "=", 0) == 0;
    };
    auto value = [&](const char* flag) -> std::string {
      const std::string prefix = std::string(flag) + "=";
      if (a.rfind(prefix, 0) == 0) return a.substr(prefix.size());
      if (i + 1 >= args.size()) throw UsageError(std::string(flag) + " needs a value");
      return args[++i];
    };
    if (a == "-h" || a == "--help") {
      o.help = true;
    } else if (is("--port")) {
      const std::string v = value("--port");
      size_t used = 0;
      int port = -1;
      try {
        port = std::stoi(v, &used);
      } catch (const std::exception&) {
      }
      if (used != v.size() || port < 0 || port > 65535)
        throw UsageError("--port must be an integer from 0 to 65535, got \"" + v + "\"");
      o.server.port = static_cast<uint16_t>(port);
    } else if (is("--address")) {
      o.server.address = value("--address");
    } else if (is("--tls-cert-file")) {
      tls.cert_file = value("--tls-cert-file");
    } else if (is("--tls-private-key-file")) {
      tls.key_file = value("--tls-private-key-file");
    } else if (is("--policy-dir")) {
      o.policy_dir = value("--policy-dir");
    } else if (is("--profile-dir")) {
      o.profile_dir = value("--profile-dir");
    } else if (is("--kubeconfig")) {
      o.kubeconfig = value("--kubeconfig");
      if (o.kubeconfig.empty()) throw UsageError("--kubeconfig must not be empty");
    } else if (is("--operator-service-account")) {
      o.config.operator_service_account = value("--operator-service-account");
      if (o.config.operator_service_account.empty())
        throw UsageError("--operator-service-account must not be empty");
    } else if (is("--workload-gate")) {
      o.config.workload_gate = true;
    } else if (is("--workload-controller")) {
      const std::string v = value("--workload-controller");
      const auto slash = v.find('/');
      if (slash == std::string::npos || slash == 0 || slash + 1 == v.size() ||
          v.find('/', slash + 1) != std::string::npos)
        throw UsageError("--workload-controller must be NAMESPACE/NAME, got \"" + v + "\"");
      o.config.workload_controllers.push_back(v);
    } else if (is("--kueue")) {
      o.kueue = true;
    } else if (is("--log-format")) {
      o.log_format = value("--log-format");
      if (o.log_format != "text" && o.log_format != "json")
        throw UsageError("--log-format must be text or json, got \"" + o.log_format + "\"");
    } else if (is("--memory-limit")) {
      const std::string text = value("--memory-limit");
      std::string error;
      const auto bytes = parse_quantity(text, &error);
      if (!bytes || *bytes < 16 * 1024 * 1024)
        throw UsageError("--memory-limit: \"" + text + "\" is not a memory size of at least 16Mi" +
                         (error.empty() ? "" : " (" + error + ")"));
      o.memory_limit = static_cast<uint64_t>(*bytes);
    } else if (is("--decision-key-file")) {
      o.decision_key_file = value("--decision-key-file");
      if (o.decision_key_file.empty()) throw UsageError("--decision-key-file must not be empty");
    } else {
      throw UsageError("unknown argument \"" + a + "\"");
    }
  }
  if (o.help) return o;
  if (tls.cert_file.empty() || tls.key_file.empty())
    throw UsageError("--tls-cert-file and --tls-private-key-file are required");
  if (o.from_files() && !o.kubeconfig.empty())
    throw UsageError("--kubeconfig cannot be combined with --policy-dir or --profile-dir");
  if (o.from_files() && o.kueue)
    throw UsageError(
        "--kueue watches Kueue's queues through the API: it cannot be combined with "
        "--policy-dir or --profile-dir");
  o.server.tls = tls;
  return o;
}

}  // namespace

int run_webhook(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  Options o;
  try {
    o = parse_args(args);
  } catch (const UsageError& e) {
    err << "commgate webhook: " << e.what() << "\n\n" << kUsage;
    return 2;
  }
  if (o.help) {
    out << kUsage;
    return 0;
  }

  // Block the stop signals before any thread starts, so every thread inherits the mask
  // and this one receives them in sigwait: no handler runs in a signal context.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  const Logger log(o.log_format == "json" ? json_log_sink(err)
                                          : text_log_sink(err, "commgate webhook"));
  o.server.log = log.with({{"component", "server"}});
  // Sized to the container, not the node (issue #19 item 8): an OOM-killed webhook under
  // failurePolicy Fail blocks every TrainingJob write.
  server::ContainerLimits limits = server::read_container_limits();
  if (o.memory_limit) limits.memory_bytes = o.memory_limit;
  const server::ServerSizing sizing =
      server::size_server(limits, std::thread::hardware_concurrency(), o.server.max_body_bytes);
  o.server.threads = static_cast<int>(sizing.threads);
  o.config.decision_threads = sizing.threads;
  o.server.max_connections = sizing.max_connections;
  o.server.max_inflight_body_bytes = sizing.max_inflight_body_bytes;
  o.server.release_memory_after_body_bytes = 1024 * 1024;
  log.info(limits.memory_bytes
               ? "sized for a memory limit of " +
                     format_bytes(static_cast<double>(*limits.memory_bytes)) + ": " +
                     std::to_string(sizing.max_connections) + " connections, " +
                     format_bytes(static_cast<double>(sizing.max_inflight_body_bytes)) +
                     " of request bodies in flight, " + std::to_string(sizing.threads) +
                     " thread(s)"
               : "no memory limit (none given, no cgroup limit): " +
                     std::to_string(sizing.max_connections) + " connections, " +
                     std::to_string(sizing.threads) + " thread(s)",
           {{"maxConnections", sizing.max_connections},
            {"maxInflightBodyBytes", sizing.max_inflight_body_bytes},
            {"threads", sizing.threads}});
  if (!o.decision_key_file.empty()) {
    try {
      o.config.records = std::make_shared<server::RecordSigner>(
          server::RecordSigner::from_file(o.decision_key_file));
    } catch (const std::exception& e) {
      err << "commgate webhook: " << e.what() << "\n";
      return 2;
    }
  } else {
    log.warning(
        "no --decision-key-file: decision records are neither signed nor checked, so a "
        "record written or copied past /mutate is held to (docs/security.md)");
  }

  try {
    // One of the two sources; the other stays null. The API client outlives the source
    // that watches through it.
    std::shared_ptr<webhook::FilePolicySource> files;
    std::unique_ptr<kube::ApiClient> api;
    std::shared_ptr<webhook::KubePolicySource> watched;
    std::shared_ptr<webhook::PolicySource> source;
    if (o.from_files()) {
      webhook::FilePolicySource::Options source_options;
      source_options.policy_dir = o.policy_dir;
      source_options.profile_dir = o.profile_dir;
      source_options.log = log.with({{"component", "policy-files"}});
      files = std::make_shared<webhook::FilePolicySource>(source_options);
      try {
        files->load_initial();
      } catch (const std::exception& e) {
        err << "commgate webhook: cannot load policies and profiles:\n" << e.what() << "\n";
        return 2;
      }
      files->start_polling();
      source = files;
    } else {
      try {
        api = std::make_unique<kube::ApiClient>(kube::resolve_config(o.kubeconfig));
      } catch (const std::exception& e) {
        err << "commgate webhook: cannot configure the Kubernetes API client:\n"
            << e.what() << "\n";
        return 2;
      }
      log.info("watching policies and profiles through " + api->config().server + " (" +
                   api->config().source + ")",
               {{"server", api->config().server}, {"configSource", api->config().source}});
      webhook::KubePolicySource::Options source_options;
      source_options.log = log.with({{"component", "policy-watch"}});
      source_options.watch_kueue_queues = o.kueue;
      // Not ready (/readyz) until all three watches have listed.
      watched = std::make_shared<webhook::KubePolicySource>(*api, source_options);
      watched->start();
      source = watched;
    }

    o.config.log = log.with({{"component", "admission"}});
    o.config.version = COMMGATE_VERSION;
    webhook::WebhookServer server(o.server, source, o.config);
    server.start();
    log.info("listening on " + o.server.address + ":" + std::to_string(server.port()) + " (https)",
             {{"address", o.server.address}, {"port", server.port()}});
    int signal_number = 0;
    sigwait(&stop_signals, &signal_number);
    log.info(std::string("received ") + (signal_number == SIGTERM ? "SIGTERM" : "SIGINT") +
             ", stopping");
    server.stop();
    if (files) files->stop();
    if (watched) watched->stop();
    log.info("stopped");
    return 0;
  } catch (const std::exception& e) {
    err << "commgate webhook: " << e.what() << "\n";
    return 2;
  }
}

}  // namespace commgate
