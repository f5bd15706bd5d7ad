#include "cli/operator_command.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <ctime>
#include <iostream>
#include <memory>

#include "cli/flag_reader.h"
#include "core/log.h"
#include "kube/cluster_config.h"
#include "server/record_signer.h"

namespace commgate {
namespace {

constexpr const char* kUsage =
    R"(Usage: commgate operator --tls-cert-file FILE --tls-private-key-file FILE [options]

Runs the TrainingJob controller: watches TrainingJobs, probes the pools they ask for,
decides, launches the training and follows it (docs/operator.md). Serves /healthz, /readyz
and /metrics over HTTPS. With leader election (the default) only the replica holding the
Lease reconciles; one that loses it exits with status 1. SIGTERM: in-flight reconciles
finish, the Lease is released, exit 0.

Options:
  --kubeconfig FILE               the API server (default: $KUBECONFIG, then the in-cluster
                                  service account, then ~/.kube/config)
  --namespace NS                  the operator's namespace: its Lease and the probes
                                  (default: $POD_NAMESPACE, else commgate-system)
  --concurrency N                 reconciles at once (default 4)
  --kube-api-qps Q                client-side rate limit, requests per second (default 20;
                                  0: no limit)
  --kube-api-burst N              requests allowed at once above the rate (default 30)
  --leader-elect[=true|false]     elect a leader among replicas (default true; false runs
                                  one replica that reconciles at once)
  --leader-elect-lease-duration D how long a Lease holder lasts without renewing (15s)
  --leader-elect-renew-deadline D how long a leader keeps acting without renewing (10s)
  --leader-elect-retry-period D   between attempts to acquire or renew (2s)
  --port N                        health and metrics port (default 8443; 0: any free port)
  --address A                     address to listen on (default 0.0.0.0)
  --tls-cert-file FILE            PEM certificate chain (required; reloaded on change)
  --tls-private-key-file FILE     PEM private key (required)
  --probe-image IMAGE             the probe's image (default
                                  commgate/commgate-probe:0.1.0; a CommPolicy's
                                  spec.probe.image wins)
  --probe-command CMD[,ARG...]    the probe container's command (default
                                  /usr/local/bin/commgate-probe); comma-separated or
                                  repeated, each occurrence appends
  --probe-port N                  the probe's rendezvous port (default 29501)
  --probe-ttl-seconds N           seconds a finished probe Job is kept (default 600)
  --probe-threads N               the probe's torch threads per rank (default 0: the
                                  cores the probe may use)
  --max-concurrent-probes N       probes running at once, in all (default 8; 0: no bound)
  --max-probes-per-namespace N    probes running at once for the jobs of one namespace
                                  (default 2; 0: no bound)
  --probe-gather D                how long a pool's first waiting job waits before its
                                  probe starts, so that jobs submitted together share
                                  one probe (default 1s; 0: at once)
  --workload-port N               the training's MASTER_PORT (default 29500)
  --workload-unschedulable-timeout D
                                  how long a training pod may wait for the scheduler
                                  before the training is stopped and fails (default
                                  10m; 0: never)
  --kueue                         also serve Kueue AdmissionChecks whose controllerName is
                                  commgate.io/comm-check: decide every Workload queued
                                  through them (kueue.x-k8s.io/v1beta2; docs/kueue.md)
  --log-format text|json          log lines on stderr as text (default) or one JSON
                                  object per line
  --decision-key-file FILE        the key (at least 32 bytes) that signs decision records;
                                  the webhook must have the same one. Without it records
                                  are not checked, and a record a user wrote or copied past
                                  the webhook is followed (docs/security.md)
Durations: whole seconds, "15s", "2m" or a bare number of seconds.
Environment: POD_NAME (Events' reportingInstance and the Lease identity; default the
host name), POD_NAMESPACE (the default of --namespace).
)";

std::string hostname() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "";
  return name;
}

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = text.find(',', start);
    out.push_back(
        text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

}  // namespace

OperatorFlags parse_operator_flags(const std::vector<std::string>& args,
                                   const std::function<std::string(const char*)>& env) {
  OperatorFlags f;
  op::OperatorOptions& o = f.options;
  o.server.address = "0.0.0.0";
  o.server.port = 8443;
  if (const std::string ns = env("POD_NAMESPACE"); !ns.empty()) o.ns = ns;
  o.pod_name = env("POD_NAME");
  server::TlsFiles tls;
  bool command_given = false;
  FlagReader flags(args);
  for (; !flags.done(); flags.next()) {
    const std::string& a = flags.current();
    if (a == "-h" || a == "--help") {
      f.help = true;
    } else if (flags.is("--kubeconfig")) {
      f.kubeconfig = flags.nonempty_value();
    } else if (flags.is("--namespace")) {
      o.ns = flags.nonempty_value();
    } else if (flags.is("--concurrency")) {
      o.concurrency = flags.int_value(1, 1024);
    } else if (flags.is("--kube-api-qps")) {
      o.kube_api_qps = flags.double_value(0);
    } else if (flags.is("--kube-api-burst")) {
      o.kube_api_burst = flags.int_value(1, 100000);
    } else if (flags.is("--leader-elect-lease-duration")) {
      o.lease_duration = flags.seconds_value(std::chrono::seconds(2));
    } else if (flags.is("--leader-elect-renew-deadline")) {
      o.renew_deadline = flags.seconds_value(std::chrono::seconds(1));
    } else if (flags.is("--leader-elect-retry-period")) {
      o.retry_period = flags.seconds_value(std::chrono::seconds(1));
    } else if (flags.is("--kueue")) {
      o.kueue = flags.bool_value();
    } else if (flags.is("--leader-elect")) {
      o.leader_elect = flags.bool_value();
    } else if (flags.is("--port")) {
      o.server.port = static_cast<uint16_t>(flags.int_value(0, 65535));
    } else if (flags.is("--address")) {
      o.server.address = flags.nonempty_value();
    } else if (flags.is("--tls-cert-file")) {
      tls.cert_file = flags.nonempty_value();
    } else if (flags.is("--tls-private-key-file")) {
      tls.key_file = flags.nonempty_value();
    } else if (flags.is("--probe-image")) {
      o.reconciler.probe.image = flags.nonempty_value();
    } else if (flags.is("--probe-command")) {
      if (!command_given) o.reconciler.probe.command.clear();
      command_given = true;
      for (std::string& part : split_commas(flags.nonempty_value())) {
        if (part.empty()) throw UsageError("--probe-command has an empty element");
        o.reconciler.probe.command.push_back(std::move(part));
      }
    } else if (flags.is("--probe-port")) {
      o.reconciler.probe.port = flags.int_value(1, 65535);
    } else if (flags.is("--probe-ttl-seconds")) {
      o.reconciler.probe.ttl_seconds_after_finished = flags.int_value(0, 1 << 30);
    } else if (flags.is("--probe-threads")) {
      o.reconciler.probe.threads = flags.int_value(0, 4096);
    } else if (flags.is("--max-concurrent-probes")) {
      o.reconciler.probe.max_concurrent = flags.int_value(0, 100000);
    } else if (flags.is("--probe-gather")) {
      o.reconciler.probe.gather = flags.seconds_value(std::chrono::seconds(0));
    } else if (flags.is("--max-probes-per-namespace")) {
      o.reconciler.probe.max_per_namespace = flags.int_value(0, 100000);
    } else if (flags.is("--workload-unschedulable-timeout")) {
      o.reconciler.workload.unschedulable_timeout = flags.seconds_value(std::chrono::seconds(0));
    } else if (flags.is("--workload-port")) {
      o.reconciler.workload.master_port = flags.int_value(1, 65535);
    } else if (flags.is("--decision-key-file")) {
      f.decision_key_file = flags.nonempty_value();
    } else if (flags.is("--log-format")) {
      f.log_format = flags.value();
      if (f.log_format != "text" && f.log_format != "json")
        throw UsageError("--log-format must be text or json, got \"" + printable(f.log_format) +
                         "\"");
    } else {
      throw flags.unknown();
    }
  }
  if (f.help) return f;
  if (tls.cert_file.empty() || tls.key_file.empty())
    throw UsageError("--tls-cert-file and --tls-private-key-file are required");
  o.server.tls = tls;
  if (o.leader_elect) {
    if (o.renew_deadline >= o.lease_duration)
      throw UsageError("--leader-elect-renew-deadline (" +
                       std::to_string(o.renew_deadline.count()) +
                       "s) must be shorter than --leader-elect-lease-duration (" +
                       std::to_string(o.lease_duration.count()) + "s)");
    if (o.retry_period >= o.renew_deadline)
      throw UsageError("--leader-elect-retry-period (" + std::to_string(o.retry_period.count()) +
                       "s) must be shorter than --leader-elect-renew-deadline (" +
                       std::to_string(o.renew_deadline.count()) + "s)");
  }
  o.reconciler.probe.ns = o.ns;
  return f;
}

int run_operator(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  OperatorFlags f;
  try {
    f = parse_operator_flags(args, [](const char* name) {
      const char* v = std::getenv(name);
      return std::string(v ? v : "");
    });
  } catch (const UsageError& e) {
    err << "commgate operator: " << e.what() << "\n\n" << kUsage;
    return 2;
  }
  if (f.help) {
    out << kUsage;
    return 0;
  }
  op::OperatorOptions& o = f.options;
  if (o.pod_name.empty()) o.pod_name = hostname();

  // Block the stop signals before any thread starts, so every thread inherits the mask
  // and this one receives them in sigtimedwait: no handler runs in a signal context.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  o.log =
      Logger(f.log_format == "json" ? json_log_sink(err) : text_log_sink(err, "commgate operator"));
  o.version = COMMGATE_VERSION;
  if (!f.decision_key_file.empty()) {
    try {
      o.reconciler.records = std::make_shared<server::RecordSigner>(
          server::RecordSigner::from_file(f.decision_key_file));
    } catch (const std::exception& e) {
      err << "commgate operator: " << e.what() << "\n";
      return 2;
    }
  } else {
    o.log.warning(
        "no --decision-key-file: decision records are not checked, so a record written or "
        "copied past the webhook is followed (docs/security.md)");
  }
  try {
    o.cluster = kube::resolve_config(f.kubeconfig);
  } catch (const std::exception& e) {
    err << "commgate operator: cannot configure the Kubernetes API client:\n" << e.what() << "\n";
    return 2;
  }

  std::unique_ptr<op::OperatorProcess> process;
  try {
    process = std::make_unique<op::OperatorProcess>(o);
    process->start();
  } catch (const std::exception& e) {
    err << "commgate operator: cannot start: " << e.what() << "\n";
    return 2;
  }
  const Logger& log = o.log;
  log.info("running as " + process->identity() + (o.leader_elect ? " (leader election on)" : ""),
           {{"identity", process->identity()}, {"namespace", o.ns}});
  for (;;) {
    const timespec poll = {0, 200'000'000};
    const int signal_number = sigtimedwait(&stop_signals, nullptr, &poll);
    if (signal_number > 0) {
      log.info(std::string("received ") + (signal_number == SIGTERM ? "SIGTERM" : "SIGINT") +
               ", stopping: in-flight reconciles finish, the Lease is released");
      process->shutdown();
      log.info("stopped");
      return 0;
    }
    if (process->lost()) {
      process->shutdown();
      log.error("exiting: leader election lost");
      return 1;
    }
  }
}

}  // namespace commgate
