#include "cli/webhook_command.h"

#include <pthread.h>
#include <signal.h>

#include <chrono>
#include <iostream>
#include <memory>
#include <mutex>
#include <stdexcept>

#include "kube/api_client.h"
#include "kube/cluster_config.h"
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
    } else {
      throw UsageError("unknown argument \"" + a + "\"");
    }
  }
  if (o.help) return o;
  if (tls.cert_file.empty() || tls.key_file.empty())
    throw UsageError("--tls-cert-file and --tls-private-key-file are required");
  if (o.from_files() && !o.kubeconfig.empty())
    throw UsageError("--kubeconfig cannot be combined with --policy-dir or --profile-dir");
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

  auto log_mu = std::make_shared<std::mutex>();
  server::LogFunction log = [log_mu, &err](server::LogLevel level, std::string_view message) {
    std::lock_guard lock(*log_mu);
    const char* tag = level == server::LogLevel::kError     ? "error"
                      : level == server::LogLevel::kWarning ? "warning"
                                                            : "info";
    err << "commgate webhook: " << tag << ": " << message << std::endl;
  };
  o.server.log = log;

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
      source_options.log = log;
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
      log(server::LogLevel::kInfo, "watching policies and profiles through " +
                                       api->config().server + " (" + api->config().source + ")");
      webhook::KubePolicySource::Options source_options;
      source_options.log = log;
      // Not ready (/readyz) until all three watches have listed.
      watched = std::make_shared<webhook::KubePolicySource>(*api, source_options);
      watched->start();
      source = watched;
    }

    webhook::WebhookServer server(o.server, source, o.config);
    server.start();
    log(server::LogLevel::kInfo,
        "listening on " + o.server.address + ":" + std::to_string(server.port()) + " (https)");
    int signal_number = 0;
    sigwait(&stop_signals, &signal_number);
    log(server::LogLevel::kInfo, std::string("received ") +
                                     (signal_number == SIGTERM ? "SIGTERM" : "SIGINT") +
                                     ", stopping");
    server.stop();
    if (files) files->stop();
    if (watched) watched->stop();
    log(server::LogLevel::kInfo, "stopped");
    return 0;
  } catch (const std::exception& e) {
    err << "commgate webhook: " << e.what() << "\n";
    return 2;
  }
}

}  // namespace commgate
