#include "sim/kubelet.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <system_error>

#include "core/base64.h"
#include "sim/api_status.h"
#include "sim/container_runtime.h"
#include "sim/garbage_collection.h"
#include "sim/http_probe.h"
#include "sim/json_fields.h"
#include "sim/netns_relay.h"
#include "sim/pod_network.h"
#include "sim/podman.h"
#include "sim/scheduler.h"

extern char** environ;  // NOLINT: POSIX's, the sim's own environment for podman

namespace commgate::sim {

std::string pod_directory(const std::string& work_dir, const std::string& ns,
                          const std::string& name, const std::string& uid) {
  return (std::filesystem::path(work_dir) / (ns + "_" + name + "_" + uid)).string();
}

std::string container_log_file(const std::string& pod_dir, const std::string& container) {
  return pod_dir + "/" + container + ".log";
}

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

constexpr std::size_t kMaxMessage = 4096;  // the kubelet's cap on a termination message

std::string now_text() {
  return format_rfc3339(Clock::now());
}

std::string read_prefix(const std::string& path, std::size_t limit) {
  std::ifstream in(path, std::ios::binary);
  std::string out(limit, '\0');
  in.read(out.data(), static_cast<std::streamsize>(limit));
  out.resize(static_cast<std::size_t>(in.gcount()));
  return out;
}

std::string read_tail(const std::string& path, std::size_t limit) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return "";
  const auto size = static_cast<std::size_t>(in.tellg());
  const std::size_t from = size > limit ? size - limit : 0;
  in.seekg(static_cast<std::streamoff>(from));
  std::string out(size - from, '\0');
  in.read(out.data(), static_cast<std::streamsize>(out.size()));
  return out;
}

// The address a node's pods get: its InternalIP when it has a network namespace.
std::pair<std::string, std::string> node_addresses(const json& node) {
  const json& annotations = at(at(node, "metadata"), "annotations");
  if (!str(at(annotations, kNetnsAnnotation)).empty()) {
    const json& addresses = at(at(node, "status"), "addresses");
    if (addresses.is_array())
      for (const auto& a : addresses)
        if (str(at(a, "type")) == "InternalIP")
          return {str(at(a, "address")), str(at(a, "address"))};
  }
  return {"127.0.0.1", "127.0.0.1"};
}

// A pod gets a network namespace of its own (sim/pod_network.h) on a node in a namespace
// that has a podCIDR, unless it asks for the host's network.
bool uses_pod_network(const json& node, const json& pod_spec) {
  return !str(at(at(at(node, "metadata"), "annotations"), kNetnsAnnotation)).empty() &&
         !str(at(at(node, "spec"), "podCIDR")).empty() && at(pod_spec, "hostNetwork") != json(true);
}

// The pod's hostname: spec.hostname, else its name.
std::string pod_hostname_of(const json& spec, const std::string& name) {
  return str(at(spec, "hostname")).empty() ? name : str(spec["hostname"]);
}

// Where a container's termination message is kept in its pod's directory.
std::string termination_log_file(const std::string& pod_dir, const std::string& container) {
  return pod_dir + "/termination-log-" + container;
}

}  // namespace

std::optional<PodDnsName> parse_pod_dns_name(const std::string& value,
                                             const std::string& default_ns) {
  std::string v = value;
  if (!v.empty() && v.back() == '.') v.pop_back();
  std::vector<std::string> labels;
  std::stringstream in(v);
  std::string label;
  while (std::getline(in, label, '.')) labels.push_back(label);
  // h.s, h.s.ns, h.s.ns.svc, h.s.ns.svc.cluster.local
  const std::size_t n = labels.size();
  if (n != 2 && n != 3 && n != 4 && n != 6) return std::nullopt;
  for (const auto& l : labels) {
    if (l.empty() || l.size() > 63) return std::nullopt;
    for (char c : l)
      if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return std::nullopt;
  }
  if (labels.size() >= 4 && labels[3] != "svc") return std::nullopt;
  if (labels.size() == 6 && !(labels[4] == "cluster" && labels[5] == "local")) return std::nullopt;
  return PodDnsName{labels[0], labels[1], labels.size() >= 3 ? labels[2] : default_ns};
}

std::string expand_env_refs(const std::string& text,
                            const std::map<std::string, std::string>& env) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '$' && i + 1 < text.size() && text[i + 1] == '$') {
      out += '$';
      ++i;
      continue;
    }
    if (text[i] == '$' && i + 1 < text.size() && text[i + 1] == '(') {
      const auto close = text.find(')', i + 2);
      if (close != std::string::npos) {
        auto it = env.find(text.substr(i + 2, close - i - 2));
        if (it != env.end()) {
          out += it->second;
          i = close;
          continue;
        }
      }
    }
    out += text[i];
  }
  return out;
}

std::optional<std::string> field_ref_value(const json& pod, const std::string& path) {
  auto keyed = [&](const std::string& prefix, const char* map) -> std::optional<std::string> {
    if (path.rfind(prefix + "['", 0) != 0 || path.size() < prefix.size() + 4 ||
        path.substr(path.size() - 2) != "']")
      return std::nullopt;
    const std::string key = path.substr(prefix.size() + 2, path.size() - prefix.size() - 4);
    const json& m = at(at(pod, "metadata"), map);
    return m.is_object() && m.contains(key) ? str(m[key]) : std::string();
  };
  if (auto v = keyed("metadata.labels", "labels")) return v;
  if (auto v = keyed("metadata.annotations", "annotations")) return v;
  const std::map<std::string, std::pair<const char*, const char*>> simple = {
      {"metadata.name", {"metadata", "name"}},
      {"metadata.namespace", {"metadata", "namespace"}},
      {"metadata.uid", {"metadata", "uid"}},
      {"spec.nodeName", {"spec", "nodeName"}},
      {"spec.serviceAccountName", {"spec", "serviceAccountName"}},
      {"status.podIP", {"status", "podIP"}},
      {"status.hostIP", {"status", "hostIP"}}};
  auto it = simple.find(path);
  if (it == simple.end()) return std::nullopt;
  return str(at(at(pod, it->second.first), it->second.second));
}

std::string image_repository(const std::string& image) {
  std::string ref = image.substr(0, image.find('@'));
  const auto slash = ref.rfind('/');
  const auto colon = ref.rfind(':');
  if (colon != std::string::npos && (slash == std::string::npos || colon > slash))
    ref.resize(colon);
  return ref;
}

std::vector<std::string> container_argv(const json& container,
                                        const std::map<std::string, std::string>& entrypoints) {
  std::vector<std::string> argv;
  for (const char* key : {"command", "args"})
    if (at(container, key).is_array())
      for (const auto& a : container[key]) argv.push_back(str(a));
  const auto it = entrypoints.find(image_repository(str(at(container, "image"))));
  if (it == entrypoints.end()) {
    const bool has_command = at(container, "command").is_array() && !container["command"].empty();
    return has_command ? argv : std::vector<std::string>{};
  }
  const std::string& program = it->second;
  const bool has_command = at(container, "command").is_array() && !container["command"].empty();
  if (!has_command) {
    argv.insert(argv.begin(), program);
  } else if (fs::path(argv[0]).filename() == fs::path(program).filename()) {
    argv[0] = program;
  }
  return argv;
}

std::string map_paths(const std::string& text, const std::vector<PathMapping>& mappings) {
  std::vector<const PathMapping*> longest_first;
  for (const auto& m : mappings)
    if (!m.container_path.empty()) longest_first.push_back(&m);
  std::stable_sort(longest_first.begin(), longest_first.end(), [](const auto* a, const auto* b) {
    return a->container_path.size() > b->container_path.size();
  });
  auto separator = [](char c) {
    return c == '=' || c == ':' || c == ',' || c == ' ' || c == '"' || c == '\'';
  };
  auto starts_path = [&](std::size_t i) { return i == 0 || separator(text[i - 1]); };
  std::string out;
  for (std::size_t i = 0; i < text.size();) {
    bool replaced = false;
    if (text[i] == '/' && starts_path(i)) {
      for (const PathMapping* m : longest_first) {
        const std::string& from = m->container_path;
        std::string base = from;
        while (base.size() > 1 && base.back() == '/') base.pop_back();
        if (text.compare(i, base.size(), base) != 0) continue;
        const std::size_t end = i + base.size();
        if (end != text.size() && text[end] != '/' && !separator(text[end])) continue;
        out += m->local_path;
        i = end;
        replaced = true;
        break;
      }
    }
    if (!replaced) out += text[i++];
  }
  return out;
}

std::optional<std::map<std::string, std::string>> volume_files(const json& volume,
                                                               const VolumeSources& sources) {
  std::map<std::string, std::string> files;
  // The keys of a Secret's or ConfigMap's data (decoded), selected by `items` when given.
  auto from_object = [&](const std::string& resource, const json& source,
                         const std::string& name_key) -> bool {
    const std::string name = str(at(source, name_key.c_str()));
    const bool optional = at(source, "optional").is_boolean() && source["optional"].get<bool>();
    const auto object = sources.find ? sources.find(resource, name) : std::nullopt;
    if (!object) return optional;
    std::map<std::string, std::string> data;
    const bool secret = resource == "secrets";
    if (at(*object, "data").is_object())
      for (const auto& [k, v] : (*object)["data"].items()) {
        try {
          data[k] = secret ? base64_decode(str(v)) : str(v);
        } catch (const std::invalid_argument&) {
          data[k] = str(v);
        }
      }
    const char* other = secret ? "stringData" : "binaryData";
    if (at(*object, other).is_object())
      for (const auto& [k, v] : (*object)[other].items()) {
        try {
          data[k] = secret ? str(v) : base64_decode(str(v));
        } catch (const std::invalid_argument&) {
          data[k] = str(v);
        }
      }
    if (at(source, "items").is_array()) {
      for (const auto& item : source["items"]) {
        auto it = data.find(str(at(item, "key")));
        if (it == data.end()) {
          if (!optional) return false;
          continue;
        }
        files[str(at(item, "path"))] = it->second;
      }
    } else {
      for (const auto& [k, v] : data) files[k] = v;
    }
    return true;
  };
  auto from_downward = [&](const json& source) {
    if (!at(source, "items").is_array() || sources.pod == nullptr) return;
    for (const auto& item : source["items"])
      if (at(item, "fieldRef").is_object())
        files[str(at(item, "path"))] =
            field_ref_value(*sources.pod, str(at(item["fieldRef"], "fieldPath"))).value_or("");
  };
  if (at(volume, "secret").is_object()) {
    if (!from_object("secrets", volume["secret"], "secretName")) return std::nullopt;
  } else if (at(volume, "configMap").is_object()) {
    if (!from_object("configmaps", volume["configMap"], "name")) return std::nullopt;
  } else if (at(volume, "downwardAPI").is_object()) {
    from_downward(volume["downwardAPI"]);
  } else if (at(at(volume, "projected"), "sources").is_array()) {
    for (const auto& source : volume["projected"]["sources"]) {
      if (at(source, "serviceAccountToken").is_object()) {
        std::string path = str(at(source["serviceAccountToken"], "path"));
        files[path.empty() ? "token" : path] = sources.token;
      } else if (at(source, "secret").is_object()) {
        if (!from_object("secrets", source["secret"], "name")) return std::nullopt;
      } else if (at(source, "configMap").is_object()) {
        // kube-root-ca.crt is published into every namespace by kube-controller-manager.
        if (str(at(source["configMap"], "name")) == "kube-root-ca.crt" && sources.find &&
            !sources.find("configmaps", "kube-root-ca.crt")) {
          files["ca.crt"] = sources.ca_pem;
          continue;
        }
        if (!from_object("configmaps", source["configMap"], "name")) return std::nullopt;
      } else if (at(source, "downwardAPI").is_object()) {
        from_downward(source["downwardAPI"]);
      }
    }
  }
  return files;
}

std::map<std::string, int> volume_file_modes(const json& volume,
                                             const std::map<std::string, std::string>& files) {
  int default_mode = 0644;
  std::map<std::string, int> item_modes;
  auto items_of = [&](const json& source) {
    if (at(source, "items").is_array())
      for (const auto& item : source["items"])
        if (at(item, "mode").is_number_integer())
          item_modes[str(at(item, "path"))] = item["mode"].get<int>();
  };
  for (const char* kind : {"secret", "configMap", "downwardAPI", "projected"}) {
    const json& source = at(volume, kind);
    if (!source.is_object()) continue;
    if (at(source, "defaultMode").is_number_integer())
      default_mode = source["defaultMode"].get<int>();
    items_of(source);
    if (at(source, "sources").is_array())
      for (const auto& projected : source["sources"])
        for (const char* part : {"secret", "configMap", "downwardAPI"})
          items_of(at(projected, part));
  }
  std::map<std::string, int> modes;
  for (const auto& [path, content] : files) {
    const auto item = item_modes.find(path);
    modes[path] = item == item_modes.end() ? default_mode : item->second;
  }
  return modes;
}

bool is_api_data_volume(const json& volume) {
  for (const char* kind : {"secret", "configMap", "downwardAPI", "projected"})
    if (at(volume, kind).is_object()) return true;
  return false;
}

Kubelet::Kubelet(ObjectStore& store, KubeletOptions options)
    : store_(store),
      options_(std::move(options)),
      pods_r_(*store.find_resource("", "v1", "pods")),
      nodes_r_(*store.find_resource("", "v1", "nodes")),
      services_r_(*store.find_resource("", "v1", "services")),
      secrets_r_(*store.find_resource("", "v1", "secrets")),
      configmaps_r_(*store.find_resource("", "v1", "configmaps")),
      service_accounts_r_(*store.find_resource("", "v1", "serviceaccounts")),
      events_r_(*store.find_resource("", "v1", "events")) {
  if (options_.work_dir.empty()) {
    std::string tmpl = (fs::temp_directory_path() / "commgate-kubelet-XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("kubelet: mkdtemp failed");
    options_.work_dir = tmpl;
    owns_work_dir_ = true;
  }
  fs::create_directories(options_.work_dir);
  event_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (event_fd_ < 0) throw std::runtime_error("kubelet: eventfd failed");
}

Kubelet::~Kubelet() {
  stop();
  if (event_fd_ >= 0) close(event_fd_);
  std::error_code ignored;
  if (owns_work_dir_) fs::remove_all(options_.work_dir, ignored);
}

void Kubelet::serve_node(const std::string& node_name) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    nodes_.insert(node_name);
  }
  wake();
}

void Kubelet::lose_node(const std::string& node_name) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    nodes_.erase(node_name);
    lost_nodes_.insert(node_name);
  }
  wake();
}

void Kubelet::relay_api_server(const std::string& netns) {
  if (api_relays_.count(netns) > 0 || options_.api_port.empty()) return;
  if (options_.api_host != "127.0.0.1") return;  // not on the host's loopback: reachable as is
  try {
    const auto port = static_cast<uint16_t>(std::stoi(options_.api_port));
    api_relays_[netns] = std::make_unique<NetnsRelay>(RelayEnd{netns, "127.0.0.1", port},
                                                      RelayEnd{"", "127.0.0.1", port});
  } catch (const std::exception&) {
    // The namespace is gone or the port is taken there: its pods find no API server, as
    // on a node whose network is broken; the next pod there tries again.
  }
}

void Kubelet::wake() {
  const uint64_t one = 1;
  [[maybe_unused]] auto n = write(event_fd_, &one, sizeof one);
}

void Kubelet::start() {
  if (options_.mount_namespaces) fs::create_directories(kServiceAccountMountPath);
  // What an earlier commgate-sim killed with SIGKILL left running (its stop() never ran).
  if (in_containers())
    for (const auto& name : remove_orphaned_containers(options_.podman, kOwnerLabel))
      std::cerr << "commgate-sim kubelet: removed container " << name
                << " of a commgate-sim that is gone\n";
  for (const ResourceInfo* r :
       {&pods_r_, &nodes_r_, &services_r_, &secrets_r_, &configmaps_r_, &service_accounts_r_}) {
    WatchRequest w;
    w.from = store_.resource_version();
    w.deliver = [this](const WatchEvent&) {  // under the store's lock: only signal
      wake();
      return true;
    };
    watches_.push_back(store_.watch(*r, std::move(w)));
  }
  wake();
  thread_ = std::thread([this] { run(); });
}

void Kubelet::stop() {
  for (uint64_t id : watches_) store_.unwatch(id);
  watches_.clear();
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake();
  if (thread_.joinable()) thread_.join();
  // The thread is gone: kill and reap what is left.
  for (auto& [uid, pod] : pods_)
    for (auto& c : pod.containers) {
      if (!c.running) continue;
      kill_container(c, SIGKILL);
      int status = 0;
      waitpid(c.pid, &status, 0);
      close(c.pidfd);
      c.running = false;
    }
  for (auto& [uid, pod] : pods_) release_pod_network(pod);
  pods_.clear();
  api_relays_.clear();
}

void Kubelet::run() {
  while (true) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) return;
    }
    try {
      sync();
    } catch (const std::exception&) {
      // The store answered an error (a pod went away mid-sync): the next event retries.
    }
    std::vector<pollfd> fds = {{event_fd_, POLLIN, 0}};
    std::vector<std::pair<Pod*, Container*>> owners = {{nullptr, nullptr}};
    int timeout_ms = -1;
    const auto now = std::chrono::steady_clock::now();
    for (auto& [uid, pod] : pods_) {
      for (auto& c : pod.containers)
        if (c.running) {
          fds.push_back({c.pidfd, POLLIN, 0});
          owners.emplace_back(&pod, &c);
        }
      // A pod whose network could not be made yet (report_once): tried again shortly,
      // as no watch event may come for it.
      if (!pod.started && !pod.killing && !pod.reported.empty())
        timeout_ms = timeout_ms < 0 ? 500 : std::min(timeout_ms, 500);
      if (pod.killing && !pod.killed_hard) {
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(pod.kill_deadline - now).count();
        const int ms = static_cast<int>(std::max<long long>(left, 0) + 1);
        timeout_ms = timeout_ms < 0 ? ms : std::min(timeout_ms, ms);
      }
    }
    if (const auto probe_at = run_probes()) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                            *probe_at - std::chrono::steady_clock::now())
                            .count();
      const int ms = static_cast<int>(std::max<long long>(left, 0) + 1);
      timeout_ms = timeout_ms < 0 ? ms : std::min(timeout_ms, ms);
    }
    if (poll(fds.data(), fds.size(), timeout_ms) < 0 && errno != EINTR) return;
    if (fds[0].revents & POLLIN) {
      uint64_t count = 0;
      [[maybe_unused]] auto n = read(event_fd_, &count, sizeof count);
    }
    for (std::size_t i = 1; i < fds.size(); ++i) {
      if (!(fds[i].revents & POLLIN)) continue;
      int status = 0;
      if (waitpid(owners[i].second->pid, &status, WNOHANG) == owners[i].second->pid)
        reap(*owners[i].first, *owners[i].second, status);
    }
  }
}

namespace {

// The httpGet readinessProbe of a container spec, or nullopt (none, or another kind).
std::optional<HttpProbe> http_readiness(const json& container, const std::string& pod_ip) {
  const json& get = at(at(container, "readinessProbe"), "httpGet");
  if (!get.is_object()) return std::nullopt;
  HttpProbe probe;
  probe.host = str(at(get, "host")).empty() ? pod_ip : str(get["host"]);
  probe.path = str(at(get, "path")).empty() ? "/" : str(get["path"]);
  probe.https = str(at(get, "scheme")) == "HTTPS";
  const json& port = at(get, "port");
  if (port.is_number_integer()) {
    probe.port = static_cast<uint16_t>(port.get<int>());
  } else if (at(container, "ports").is_array()) {
    for (const auto& p : container["ports"])
      if (str(at(p, "name")) == str(port) && at(p, "containerPort").is_number_integer())
        probe.port = static_cast<uint16_t>(p["containerPort"].get<int>());
  }
  return probe;
}

int probe_int(const json& container, const char* field, int fallback) {
  const json& v = at(at(container, "readinessProbe"), field);
  return v.is_number_integer() ? v.get<int>() : fallback;
}

}  // namespace

std::optional<std::chrono::steady_clock::time_point> Kubelet::run_probes() {
  std::optional<std::chrono::steady_clock::time_point> next;
  for (auto& [uid, pod] : pods_) {
    if (pod.killing || !at(pod.spec, "containers").is_array()) continue;
    bool changed = false;
    for (auto& c : pod.containers) {
      const json* spec = nullptr;
      for (const auto& s : pod.spec["containers"])
        if (str(at(s, "name")) == c.name) spec = &s;
      if (spec == nullptr || !c.running) continue;
      const auto probe = http_readiness(*spec, pod.pod_ip);
      if (!probe) {
        changed = changed || !c.ready;
        c.ready = true;
        continue;
      }
      const auto now = std::chrono::steady_clock::now();
      if (now >= c.next_probe) {
        // From inside the node's network namespace, where the pod's IP is reachable.
        bool ok = false;
        if (probe->port != 0) {
          const std::chrono::seconds timeout(std::max(1, probe_int(*spec, "timeoutSeconds", 1)));
          try {
            run_in_netns(pod.netns, [&] { ok = run_http_probe(*probe, timeout); });
          } catch (const std::system_error&) {
            ok = false;  // the namespace is gone: the pod cannot answer
          }
        }
        if (ok) {
          c.probe_failures = 0;
          if (++c.probe_successes >= probe_int(*spec, "successThreshold", 1) && !c.ready) {
            c.ready = true;
            changed = true;
          }
        } else {
          c.probe_successes = 0;
          if (++c.probe_failures >= probe_int(*spec, "failureThreshold", 3) && c.ready) {
            c.ready = false;
            changed = true;
          }
        }
        const auto period = std::min<std::chrono::milliseconds>(
            std::chrono::seconds(std::max(1, probe_int(*spec, "periodSeconds", 10))),
            options_.max_probe_period);
        c.next_probe = std::chrono::steady_clock::now() + period;
      }
      if (!next || c.next_probe < *next) next = c.next_probe;
    }
    if (changed) write_status(pod);
  }
  return next;
}

void Kubelet::sync() {
  std::set<std::string> nodes, lost;
  {
    std::lock_guard<std::mutex> lock(mu_);
    nodes = nodes_;
    lost = lost_nodes_;
  }
  const auto all_pods = store_.list(pods_r_, "", {}).items;
  const auto all_nodes = store_.list(nodes_r_, "", {}).items;
  std::map<std::string, const json*> mine;  // by uid
  for (const auto& p : all_pods)
    if (nodes.count(str(at(at(p, "spec"), "nodeName"))) > 0) mine[str(p["metadata"]["uid"])] = &p;

  for (const auto& [uid, obj] : mine) {
    if (pods_.count(uid) > 0 || is_terminal(*obj) || is_deleting(*obj)) continue;
    Pod pod;
    pod.ns = str(obj->at("metadata")["namespace"]);
    pod.name = str(obj->at("metadata")["name"]);
    pod.uid = uid;
    pod.node = str(obj->at("spec")["nodeName"]);
    pod.spec = obj->at("spec");
    pod.dir = pod_directory(options_.work_dir, pod.ns, pod.name, uid);
    pods_[uid] = std::move(pod);
  }
  const auto now = std::chrono::steady_clock::now();
  std::vector<std::string> forget;
  for (auto& [uid, pod] : pods_) {
    auto it = mine.find(uid);
    if (!pod.lost && lost.count(pod.node) > 0) {
      pod.lost = pod.killing = pod.killed_hard = true;
      bool any = false;
      for (auto& c : pod.containers)
        if (c.running) {
          kill_container(c, SIGKILL);
          any = true;
        }
      if (!any) write_status(pod);  // else once reaped, with the exit codes
    }
    if ((it == mine.end() || is_deleting(*it->second)) && !pod.killing) begin_kill(pod);
    if (!pod.started && !pod.killing) start_pod(pod, *it->second, all_pods, all_nodes);
    if (pod.killing && !pod.killed_hard && now >= pod.kill_deadline) {
      for (auto& c : pod.containers)
        if (c.running) kill_container(c, SIGKILL);
      pod.killed_hard = true;
    }
    bool any_running = false;
    for (const auto& c : pod.containers) any_running = any_running || c.running;
    if (pod.killing && !any_running) forget.push_back(uid);
  }
  for (const auto& uid : forget) {
    release_pod_network(pods_[uid]);
    pods_.erase(uid);
  }
}

void Kubelet::release_pod_network(Pod& pod) {
  if (pod.network_index == 0) return;
  api_relays_.erase(pod.netns);  // its sockets hold the namespace
  detach_pod_network(pod.node_netns, pod.network_index);
  pod.network_index = 0;
}

int Kubelet::free_network_index(const std::string& node) const {
  std::set<int> taken;
  for (const auto& [uid, p] : pods_)
    if (p.node == node && p.network_index > 0) taken.insert(p.network_index);
  for (int index = 2; index <= 254; ++index)
    if (taken.count(index) == 0) return index;
  return 0;
}

void Kubelet::report_once(Pod& pod, const std::string& problem) {
  if (pod.reported == problem) return;
  pod.reported = problem;
  std::cerr << "commgate-sim kubelet: pod " << pod.ns << "/" << pod.name << ": " << problem << "\n";
}

void Kubelet::kill_container(Container& c, int signal) {
  if (in_containers() && signal == SIGKILL) podman_remove(options_.podman, {c.podman_name});
  kill(-c.pid, signal);
}

void Kubelet::begin_kill(Pod& pod) {
  pod.killing = true;
  long long grace_s = 30;
  if (at(pod.spec, "terminationGracePeriodSeconds").is_number_integer())
    grace_s = pod.spec["terminationGracePeriodSeconds"].get<long long>();
  const auto grace =
      std::min<std::chrono::milliseconds>(std::chrono::seconds(grace_s), options_.max_grace);
  pod.kill_deadline = std::chrono::steady_clock::now() + grace;
  for (auto& c : pod.containers)
    if (c.running) kill_container(c, grace.count() == 0 ? SIGKILL : SIGTERM);
}

void Kubelet::start_pod(Pod& pod, const json& object, const std::vector<json>& pods,
                        const std::vector<json>& nodes) {
  const json* node = nullptr;
  for (const auto& n : nodes)
    if (str(n["metadata"]["name"]) == pod.node) node = &n;
  if (node == nullptr) return;
  std::tie(pod.pod_ip, pod.host_ip) = node_addresses(*node);
  pod.node_netns = str(at(at(at(*node, "metadata"), "annotations"), kNetnsAnnotation));
  std::string netns = pod.node_netns;
  const bool own_network = uses_pod_network(*node, pod.spec);
  if (own_network) {
    // The address is chosen now (env may read status.podIP), the namespace made just
    // before the containers start; a retry keeps the index.
    if (pod.network_index == 0) pod.network_index = free_network_index(pod.node);
    const auto address = pod_address(str(at(at(*node, "spec"), "podCIDR")), pod.network_index);
    if (!address) {
      report_once(pod, "node " + pod.node + ": no pod address left in its podCIDR " +
                           str(at(at(*node, "spec"), "podCIDR")) + " (a /24 gives 253)");
      return;
    }
    pod.pod_ip = address->ip;
    netns = pod_netns_name(pod.node_netns, pod.network_index);
  }
  json self = object;
  self["status"]["podIP"] = pod.pod_ip;
  self["status"]["hostIP"] = pod.host_ip;

  // Services that exist (for pod DNS names) and the IP of each bound pod by hostname.
  const auto services = store_.list(services_r_, "", {}).items;
  auto has_service = [&](const std::string& ns, const std::string& name) {
    for (const auto& s : services)
      if (str(s["metadata"]["namespace"]) == ns && str(s["metadata"]["name"]) == name) return true;
    return false;
  };
  // The address a pod of the name has now: nullopt while it is not bound, or (with a
  // network of its own) its kubelet has not started it (this pod's own is chosen above).
  auto address_of = [&](const json& p) -> std::optional<std::string> {
    const std::string bound_to = str(at(p["spec"], "nodeName"));
    for (const auto& n : nodes) {
      if (bound_to.empty() || str(n["metadata"]["name"]) != bound_to) continue;
      if (!uses_pod_network(n, at(p, "spec"))) return node_addresses(n).first;
      const std::string ip =
          str(at(p["metadata"], "uid")) == pod.uid ? pod.pod_ip : str(at(at(p, "status"), "podIP"));
      if (ip.empty()) return std::nullopt;
      return ip;
    }
    return std::nullopt;
  };
  auto resolve = [&](const PodDnsName& d) -> std::optional<std::string> {
    // A live pod of that name first: when a Job replaced a failed pod 0, the name is the
    // replacement's, and a container waits until it has an address (the failed pod's
    // address is dead, and may be another pod's by now: the trial of 2026-12-05 saw a
    // retried rank 1 wait 600 s for a rank 0 that had failed). Only when no live pod has
    // the name does a finished one still resolve, and only one of this pod's own
    // controller (a Job's pod 0 that succeeded before pod 1 started): a waiting
    // container must not hang because the name's owner was quicker than it, and must not
    // get the dead address of an earlier Job's pod of the same name (a pool's second
    // probe Job, whose pod 1 started before its pod 0 existed, took 70 s on the first
    // probe's pod 0 address; upstream's headless Service has no record for either).
    const std::string own_controller = controller_uid(object);
    std::optional<std::string> finished;
    bool owner_on_its_way = false;
    for (const auto& p : pods) {
      if (str(p["metadata"]["namespace"]) != d.ns || is_deleting(p)) continue;
      if (str(at(p["spec"], "hostname")) != d.hostname ||
          str(at(p["spec"], "subdomain")) != d.subdomain)
        continue;
      const std::optional<std::string> ip = address_of(p);
      if (!is_terminal(p)) {
        if (ip) return ip;
        owner_on_its_way = true;
      } else if (!finished && controller_uid(p) == own_controller) {
        finished = ip;
      }
    }
    if (owner_on_its_way) return std::nullopt;
    return finished;
  };

  const json& containers = at(pod.spec, "containers");
  if (!containers.is_array()) return;
  std::vector<std::map<std::string, std::string>> envs;
  for (const auto& spec : containers) {
    std::map<std::string, std::string> env;
    // A process shares this machine's files: it needs the sim's PATH and libraries. A
    // container has its image's (its runtime sets HOSTNAME and the image's env).
    if (!in_containers()) {
      for (const char* inherited : {"PATH", "LD_LIBRARY_PATH", "TMPDIR"})
        if (const char* v = std::getenv(inherited)) env[inherited] = v;
      env["HOME"] = pod.dir;
      env["HOSTNAME"] = pod_hostname_of(pod.spec, pod.name);
    }
    // The `kubernetes` Service's variables every pod gets (in-cluster clients read them).
    if (!options_.api_host.empty()) {
      env["KUBERNETES_SERVICE_HOST"] = options_.api_host;
      env["KUBERNETES_SERVICE_PORT"] = options_.api_port;
      env["KUBERNETES_SERVICE_PORT_HTTPS"] = options_.api_port;
    }
    if (at(spec, "env").is_array())
      for (const auto& e : spec["env"]) {
        const std::string name = str(at(e, "name"));
        std::string value;
        if (at(e, "value").is_string()) {
          value = expand_env_refs(str(e["value"]), env);
        } else if (at(at(e, "valueFrom"), "fieldRef").is_object()) {
          value =
              field_ref_value(self, str(at(e["valueFrom"]["fieldRef"], "fieldPath"))).value_or("");
        }
        if (auto dns = parse_pod_dns_name(value, pod.ns);
            dns && has_service(dns->ns, dns->subdomain)) {
          auto ip = resolve(*dns);
          if (!ip) return;  // the named pod is not placed yet: start later (ContainerCreating)
          value = *ip;
        }
        env[name] = value;
      }
    envs.push_back(std::move(env));
  }

  std::map<std::string, std::string> volume_dirs;
  if (in_containers() && !pod.waiting_reason.empty() &&
      std::chrono::steady_clock::now() < pod.next_try)
    return;  // refused a moment ago: not asked again at every event
  if (!write_volumes(pod, self, volume_dirs)) return;  // a Secret/ConfigMap missing: wait
  if (in_containers()) {
    set_volume_ownership(pod, volume_dirs);
    pod.netns = netns;
    if (!plan_containers(pod, containers, envs, volume_dirs)) return;
  }
  if (own_network) {
    try {
      attach_pod_network(pod.node_netns, pod.network_index,
                         *pod_address(str(at(at(*node, "spec"), "podCIDR")), pod.network_index));
    } catch (const std::exception& e) {
      report_once(pod, e.what());  // the pod waits, as ContainerCreating; the next sync retries
      return;
    }
  }
  if (!netns.empty()) relay_api_server(netns);
  if (pod.start_time.empty()) pod.start_time = now_text();
  pod.started = true;
  pod.netns = netns;
  for (std::size_t i = 0; i < containers.size(); ++i) {
    Container c;
    c.env = envs[i];
    c.name = str(at(containers[i], "name"));
    if (at(containers[i], "volumeMounts").is_array())
      for (const auto& m : containers[i]["volumeMounts"]) {
        auto dir = volume_dirs.find(str(at(m, "name")));
        if (dir == volume_dirs.end()) continue;
        const std::string sub = str(at(m, "subPath"));
        c.mounts.push_back(
            {str(at(m, "mountPath")), sub.empty() ? dir->second : dir->second + "/" + sub});
      }
    if (!pod.service_account_dir.empty())
      c.mounts.push_back({kServiceAccountMountPath, pod.service_account_dir});
    c.termination_file = termination_log_file(pod.dir, c.name);
    c.log_file = container_log_file(pod.dir, c.name);
    if (in_containers()) {
      c.podman_name = pod.planned[i].first;
      c.podman_args = std::move(pod.planned[i].second);
    }
    pod.containers.push_back(std::move(c));
  }
  pod.planned.clear();
  for (std::size_t i = 0; i < containers.size(); ++i)
    spawn(pod, pod.containers[i], containers[i], envs[i], netns);
  write_status(pod);
}

bool Kubelet::write_volumes(Pod& pod, const json& object,
                            std::map<std::string, std::string>& volume_dirs) {
  fs::create_directories(pod.dir);
  auto find = [&](const std::string& resource, const std::string& name) -> std::optional<json> {
    try {
      return store_.get(resource == "secrets" ? secrets_r_ : configmaps_r_, pod.ns, name);
    } catch (const ApiError&) {
      return std::nullopt;
    }
  };
  std::string account = str(at(pod.spec, "serviceAccountName"));
  if (account.empty()) account = "default";
  const auto token = options_.service_account_tokens.find(pod.ns + "/" + account);
  VolumeSources sources{&object, find,
                        token == options_.service_account_tokens.end() ? "" : token->second,
                        options_.api_ca_pem};
  auto write = [](const std::string& dir, const std::map<std::string, std::string>& files) {
    fs::create_directories(dir);
    for (const auto& [path, content] : files) {
      const fs::path file = fs::path(dir) / path;
      fs::create_directories(file.parent_path());
      std::ofstream(file, std::ios::binary | std::ios::trunc) << content;
    }
  };
  if (at(pod.spec, "volumes").is_array())
    for (const auto& volume : pod.spec["volumes"]) {
      const auto files = volume_files(volume, sources);
      if (!files) return false;
      const std::string dir = pod.dir + "/volumes/" + str(at(volume, "name"));
      write(dir, *files);
      volume_dirs[str(at(volume, "name"))] = dir;
    }
  // The service-account volume upstream's admission adds (kube-api-access-<random>):
  // unless the pod or its ServiceAccount opts out, or a volume is mounted there already.
  bool automount = true;
  if (at(pod.spec, "automountServiceAccountToken").is_boolean()) {
    automount = pod.spec["automountServiceAccountToken"].get<bool>();
  } else {
    try {
      const json sa = store_.get(service_accounts_r_, pod.ns, account);
      if (at(sa, "automountServiceAccountToken").is_boolean())
        automount = sa["automountServiceAccountToken"].get<bool>();
    } catch (const ApiError&) {
      // No such ServiceAccount object (the sim makes no `default` ones): mounted anyway.
    }
  }
  if (at(pod.spec, "containers").is_array())
    for (const auto& c : pod.spec["containers"])
      if (at(c, "volumeMounts").is_array())
        for (const auto& m : c["volumeMounts"])
          if (str(at(m, "mountPath")) == kServiceAccountMountPath) automount = false;
  if (automount) {
    pod.service_account_dir = pod.dir + "/serviceaccount";
    write(pod.service_account_dir,
          {{"token", sources.token}, {"ca.crt", options_.api_ca_pem}, {"namespace", pod.ns}});
  }
  return true;
}

void Kubelet::record_warning(const Pod& pod, const std::string& container,
                             const std::string& reason, const std::string& message) {
  const std::string now = now_text();
  const json event = {
      {"metadata",
       {{"name", pod.name + "." +
                     std::to_string(std::chrono::system_clock::now().time_since_epoch().count())},
        {"namespace", pod.ns}}},
      {"involvedObject",
       {{"apiVersion", "v1"},
        {"kind", "Pod"},
        {"namespace", pod.ns},
        {"name", pod.name},
        {"uid", pod.uid},
        {"fieldPath", "spec.containers{" + container + "}"}}},
      {"reason", reason},
      {"message", message},
      {"type", "Warning"},
      {"source", {{"component", "kubelet"}, {"host", pod.node}}},
      {"reportingComponent", "kubelet"},
      {"reportingInstance", pod.node},
      {"firstTimestamp", now},
      {"lastTimestamp", now},
      {"count", 1}};
  try {
    store_.create(events_r_, pod.ns, event);
  } catch (const ApiError&) {
    // The namespace is going away: nobody reads the Event.
  }
}

void Kubelet::set_volume_ownership(const Pod& pod,
                                   const std::map<std::string, std::string>& volume_dirs) {
  const json& fs_group = at(at(pod.spec, "securityContext"), "fsGroup");
  const bool grouped = fs_group.is_number_integer();
  const gid_t gid = grouped ? static_cast<gid_t>(fs_group.get<long long>()) : 0;
  std::error_code ignored;
  // Directories: traversable by all (0755), with fsGroup that group and setgid; files:
  // their mode, with fsGroup that group and group read (read-only volumes: upstream's
  // roMask), as pkg/volume/volume_linux.go SetVolumeOwnership does.
  auto own = [&](const std::string& root, const std::map<std::string, int>& modes, int fallback) {
    auto set = [&](const fs::path& p, mode_t mode) {
      if (grouped) {
        [[maybe_unused]] int rc = chown(p.c_str(), static_cast<uid_t>(-1), gid);
      }
      chmod(p.c_str(), mode);
    };
    set(root, grouped ? (S_ISGID | 0755) : 0755);
    for (const auto& entry : fs::recursive_directory_iterator(root, ignored)) {
      if (entry.is_directory(ignored)) {
        set(entry.path(), grouped ? (S_ISGID | 0755) : 0755);
        continue;
      }
      const std::string rel = fs::relative(entry.path(), root, ignored).string();
      const auto mode = modes.find(rel);
      const int bits = mode == modes.end() ? fallback : mode->second;
      set(entry.path(), static_cast<mode_t>(bits | (grouped ? 0040 : 0)));
    }
  };
  if (at(pod.spec, "volumes").is_array())
    for (const auto& volume : pod.spec["volumes"]) {
      const auto dir = volume_dirs.find(str(at(volume, "name")));
      if (dir == volume_dirs.end()) continue;
      if (!is_api_data_volume(volume)) {  // emptyDir: writable by every user, as upstream's
        chmod(dir->second.c_str(), grouped ? (S_ISGID | 0777) : 0777);
        if (grouped) {
          [[maybe_unused]] int rc = chown(dir->second.c_str(), static_cast<uid_t>(-1), gid);
        }
        continue;
      }
      std::map<std::string, std::string> files;
      for (const auto& entry : fs::recursive_directory_iterator(dir->second, ignored))
        if (!entry.is_directory(ignored))
          files[fs::relative(entry.path(), dir->second, ignored).string()] = "";
      own(dir->second, volume_file_modes(volume, files), 0644);
    }
  if (!pod.service_account_dir.empty()) own(pod.service_account_dir, {}, 0644);
}

bool Kubelet::plan_containers(Pod& pod, const json& containers,
                              const std::vector<std::map<std::string, std::string>>& envs,
                              const std::map<std::string, std::string>& volume_dirs) {
  auto wait = [&](const std::string& container, const std::string& reason,
                  const std::string& message) {
    pod.next_try = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    if (pod.start_time.empty()) pod.start_time = now_text();
    report_once(pod, reason + ": " + message);
    if (pod.waiting_container == container && pod.waiting_reason == reason &&
        pod.waiting_message == message)
      return false;
    pod.waiting_container = container;
    pod.waiting_reason = reason;
    pod.waiting_message = message;
    write_status(pod);
    // The kubelet's Warning Event, which `kubectl describe pod` shows (upstream's
    // kuberuntime: reason Failed, "Error: " and the message).
    record_warning(pod, container, "Failed", "Error: " + message);
    return false;
  };
  // Volumes this mode can mount: what the kubelet writes itself.
  std::map<std::string, bool> read_only_volume;
  if (at(pod.spec, "volumes").is_array())
    for (const auto& volume : pod.spec["volumes"]) {
      const std::string name = str(at(volume, "name"));
      if (!is_api_data_volume(volume) && !at(volume, "emptyDir").is_object())
        return wait(str(at(containers[0], "name")), "CreateContainerConfigError",
                    "volume " + name +
                        ": commgate-sim's container mode mounts secret, configMap, downwardAPI, "
                        "projected and emptyDir volumes only");
      read_only_volume[name] = is_api_data_volume(volume);
    }
  pod.planned.clear();
  const std::string pod_hostname = pod_hostname_of(pod.spec, pod.name);
  std::string names = pod_hostname;
  if (const std::string subdomain = str(at(pod.spec, "subdomain")); !subdomain.empty())
    names = pod_hostname + "." + subdomain + "." + pod.ns + ".svc.cluster.local\t" + pod_hostname;
  const std::string hosts_file = pod.dir + "/etc-hosts";
  std::ofstream(hosts_file, std::ios::trunc)
      << "# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost "
         "ip6-loopback\nfe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\n"
         "fe00::2\tip6-allrouters\n"
      << pod.pod_ip << "\t" << names << "\n";
  chmod(hosts_file.c_str(), 0644);
  for (std::size_t i = 0; i < containers.size(); ++i) {
    const json& spec = containers[i];
    const std::string name = str(at(spec, "name"));
    const std::string image = str(at(spec, "image"));
    const auto image_user = podman_image_user(options_.podman, image);
    if (!image_user) {
      if (str(at(spec, "imagePullPolicy")) == "Never")
        return wait(name, "ErrImageNeverPull",
                    "Container image \"" + image + "\" is not present with pull policy of Never");
      return wait(name, "ErrImagePull",
                  "commgate-sim pulls no images: \"" + image +
                      "\" is not in this machine's podman store (`podman images`; "
                      "scripts/images-from-binaries.sh makes commgate's)");
    }
    ContainerLaunch launch;
    launch.name = "k8s_" + name + "_" + pod.name + "_" + pod.ns + "_" + pod.uid;
    launch.image = image;
    launch.netns = pod.netns;
    const bool host_network =
        at(pod.spec, "hostNetwork").is_boolean() && pod.spec["hostNetwork"].get<bool>();
    launch.hostname = host_network ? pod.node : pod_hostname;
    launch.pod_label = pod.name + "_" + pod.ns + "(" + pod.uid + ")";
    launch.env = envs[i];
    for (const char* part : {"command", "args"})
      if (at(spec, part).is_array())
        for (const auto& word : spec[part])
          (std::string(part) == "command" ? launch.command : launch.args)
              .push_back(expand_env_refs(str(word), envs[i]));
    if (at(spec, "volumeMounts").is_array())
      for (const auto& m : spec["volumeMounts"]) {
        const std::string volume = str(at(m, "name"));
        const auto dir = volume_dirs.find(volume);
        if (dir == volume_dirs.end()) continue;
        const std::string sub = str(at(m, "subPath"));
        launch.mounts.push_back(
            {sub.empty() ? dir->second : dir->second + "/" + sub, str(at(m, "mountPath")),
             read_only_volume[volume] ||
                 (at(m, "readOnly").is_boolean() && m["readOnly"].get<bool>())});
      }
    if (!pod.service_account_dir.empty())
      launch.mounts.push_back({pod.service_account_dir, kServiceAccountMountPath, true});
    // The kubelet-managed /etc/hosts (upstream's managedHostsFileContent): the pod's own
    // name at its IP, so that a program that binds to its hostname's address (Gloo's
    // default device) finds the pod's interface, not a loopback one.
    launch.mounts.push_back({hosts_file, "/etc/hosts", false});
    std::string termination_path = str(at(spec, "terminationMessagePath"));
    if (termination_path.empty()) termination_path = "/dev/termination-log";
    // spawn() makes the file (writable by any user) before podman mounts it.
    launch.mounts.push_back({termination_log_file(pod.dir, name), termination_path, false});
    launch.image_user = *image_user;
    launch.run_options = options_.podman_run_options;
    launch.owner_label = std::string(kOwnerLabel) + "=" + std::to_string(getpid());
    ContainerRunPlan plan = podman_run_plan(pod.spec, spec, launch);
    if (!plan.refusal.empty()) return wait(name, "CreateContainerConfigError", plan.refusal);
    pod.planned.emplace_back(launch.name, std::move(plan.args));
  }
  pod.waiting_container.clear();
  pod.waiting_reason.clear();
  pod.waiting_message.clear();
  pod.reported.clear();
  return true;
}

bool Kubelet::spawn(Pod& pod, Container& c, const json& spec,
                    const std::map<std::string, std::string>& base_env, const std::string& netns) {
  std::map<std::string, std::string> env = base_env;
  env["TERMINATION_LOG_PATH"] = c.termination_file;
  std::string path = str(at(spec, "terminationMessagePath"));
  if (path.empty()) path = "/dev/termination-log";
  { std::ofstream(c.termination_file, std::ios::trunc); }
  if (in_containers()) chmod(c.termination_file.c_str(), 0666);  // the container's user writes it
  for (auto& [name, value] : env) value = map_paths(value, c.mounts);
  std::vector<std::string> argv;
  if (in_containers()) {
    // `podman run` in the foreground: its output is the container's, its exit status the
    // container's, and it passes SIGTERM on (--sig-proxy). Its own environment is the sim's
    // (environ below); the container's is in its arguments.
    argv = options_.podman;
    argv.insert(argv.end(), c.podman_args.begin(), c.podman_args.end());
  } else if (!netns.empty()) {
    argv = {"ip", "netns", "exec", netns};
  }
  const bool in_mount_ns =
      !in_containers() && options_.mount_namespaces && !pod.service_account_dir.empty();
  if (in_mount_ns)
    argv.insert(argv.end(),
                {"unshare", "--mount", "--propagation", "private", "--", "/bin/sh", "-c",
                 std::string("mount --bind \"$0\" ") + kServiceAccountMountPath + " && exec \"$@\"",
                 pod.service_account_dir});
  const std::size_t program_at = in_containers() ? 0 : argv.size();
  const std::vector<std::string> command = in_containers()
                                               ? std::vector<std::string>{}
                                               : container_argv(spec, options_.image_entrypoints);
  for (const auto& a : command) {
    std::string arg = expand_env_refs(a, env);
    for (std::size_t at_pos = arg.find(path); at_pos != std::string::npos;
         at_pos = arg.find(path, at_pos + c.termination_file.size()))
      arg.replace(at_pos, path.size(), c.termination_file);
    argv.push_back(map_paths(arg, c.mounts));
  }
  c.started_at = now_text();
  const bool has_command = in_containers() || !command.empty();
  std::string workdir = str(at(spec, "workingDir"));
  if (workdir.empty() || in_containers())
    workdir = pod.dir;  // podman's: --workdir is the container's

  int err = 0;
  if (!has_command) {
    err = ENOEXEC;
  } else {
    std::vector<char*> args, envp;
    std::vector<std::string> env_strings;
    for (auto& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    for (const auto& [k, v] : env) env_strings.push_back(k + "=" + v);
    for (auto& e : env_strings) envp.push_back(e.data());
    envp.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, c.log_file.c_str(), O_WRONLY | O_CREAT | O_APPEND,
                                     0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    // Nothing else of this process: its sockets (the API server's listener, clients'
    // connections) are not CLOEXEC, and a pod holding the listener keeps the port bound
    // after ApiServer::restart closed it, so the server cannot listen there again.
    posix_spawn_file_actions_addclosefrom_np(&fa, 3);
    posix_spawn_file_actions_addchdir_np(&fa, workdir.c_str());
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    // Its own process group (killed as a whole), default signal dispositions and an empty
    // mask: commgate-sim blocks SIGTERM/SIGINT in its threads, which children inherit.
    posix_spawnattr_setflags(
        &attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    posix_spawnattr_setpgroup(&attr, 0);
    sigset_t none, defaults;
    sigemptyset(&none);
    posix_spawnattr_setsigmask(&attr, &none);
    sigemptyset(&defaults);
    for (int s : {SIGTERM, SIGINT, SIGHUP, SIGPIPE, SIGQUIT, SIGUSR1, SIGUSR2, SIGCHLD})
      sigaddset(&defaults, s);
    posix_spawnattr_setsigdefault(&attr, &defaults);
    err = posix_spawnp(&c.pid, args[0], &fa, &attr, args.data(),
                       in_containers() ? environ : envp.data());
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
  }
  c.ready = !http_readiness(spec, pod.pod_ip).has_value();  // no probe: ready when running
  c.probe_failures = c.probe_successes = 0;
  c.next_probe = std::chrono::steady_clock::now() +
                 std::chrono::seconds(std::max(0, probe_int(spec, "initialDelaySeconds", 0)));
  if (err == 0) {
    c.pidfd = static_cast<int>(syscall(SYS_pidfd_open, c.pid, 0));
    if (c.pidfd < 0) {  // cannot watch it: do not leave it running unobserved
      kill(-c.pid, SIGKILL);
      int status = 0;
      waitpid(c.pid, &status, 0);
      err = errno == 0 ? ENOSYS : errno;
    }
  }
  if (err != 0) {
    // The runtime's StartError: exit code 128, the exec error as message.
    c.running = false;
    c.done = true;
    c.exit_code = 128;
    c.reason = "StartError";
    c.message = has_command ? "exec: \"" + argv[program_at] + "\": " + std::strerror(err)
                            : "commgate-sim runs a container's command, or its image's "
                              "entrypoint given with --image-entrypoint; neither is known for \"" +
                                  str(at(spec, "image")) + "\"";
    c.finished_at = now_text();
    // Under restartPolicy Always the kubelet would retry with a back-off for ever
    // (CrashLoopBackOff) and the pod would never fail; the sim does not retry, but keeps
    // the pod Running with the container waiting, so a Deployment's ReplicaSet does not
    // replace it in a tight loop.
    std::string policy = str(at(pod.spec, "restartPolicy"));
    if (policy.empty() || policy == "Always") {
      c.done = false;
      c.crash_looping = true;
      c.last_state = {{"terminated",
                       {{"exitCode", c.exit_code},
                        {"reason", c.reason},
                        {"message", c.message},
                        {"startedAt", c.started_at},
                        {"finishedAt", c.finished_at}}}};
    }
    return false;
  }
  c.crash_looping = false;
  c.running = true;
  return true;
}

void Kubelet::reap(Pod& pod, Container& c, int status) {
  c.running = false;
  close(c.pidfd);
  c.pidfd = -1;
  kill(-c.pid, SIGKILL);  // what the container left behind goes with it (cgroup semantics)
  // `podman run` itself was killed, or ended while its pod was being killed (a SIGTERM
  // before it started the container ends it and leaves the container created): its
  // container may still be there. --rm removed it on every other exit.
  if (in_containers() && (WIFSIGNALED(status) || pod.killing))
    podman_remove(options_.podman, {c.podman_name});
  c.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  c.finished_at = now_text();
  c.reason = c.exit_code == 0 ? "Completed" : "Error";
  c.message = read_prefix(c.termination_file, kMaxMessage);
  // podman's own failure (exit 125, "Error: ..." last): the container never started, the
  // runtime's StartError (exit 128) as upstream reports it.
  if (in_containers() && c.exit_code == 125) {
    std::string tail = read_tail(c.log_file, 2048);
    while (!tail.empty() && tail.back() == '\n') tail.pop_back();
    const std::string last =
        tail.substr(tail.rfind('\n') == std::string::npos ? 0 : tail.rfind('\n') + 1);
    if (last.rfind("Error: ", 0) == 0) {
      c.exit_code = 128;
      c.reason = "StartError";
      c.message = "podman run: " + last.substr(7);
    }
  }
  const json* spec = nullptr;
  for (const auto& s : pod.spec["containers"])
    if (str(at(s, "name")) == c.name) spec = &s;
  if (c.message.empty() && c.exit_code != 0 && spec != nullptr &&
      str(at(*spec, "terminationMessagePolicy")) == "FallbackToLogsOnError")
    c.message = read_tail(c.log_file, 2048);
  std::string policy = str(at(pod.spec, "restartPolicy"));
  if (policy.empty()) policy = "Always";
  const bool restart =
      !pod.killing && (policy == "Always" || (policy == "OnFailure" && c.exit_code != 0));
  if (restart && spec != nullptr) {
    json terminated = {{"exitCode", c.exit_code},
                       {"reason", c.reason},
                       {"startedAt", c.started_at},
                       {"finishedAt", c.finished_at},
                       {"containerID", "sim://" + std::to_string(c.pid)}};
    if (!c.message.empty()) terminated["message"] = c.message;
    c.last_state = {{"terminated", terminated}};
    ++c.restarts;
    // Restarted in place at once (no CrashLoopBackOff delay), with the same env.
    spawn(pod, c, *spec, c.env, pod.netns);
  } else {
    c.done = true;
  }
  if (!pod.killing) write_status(pod);
  if (pod.lost) {
    bool any_running = false;
    for (const auto& other : pod.containers) any_running = any_running || other.running;
    if (!any_running) write_status(pod);
  }
}

void Kubelet::write_status(Pod& pod) {
  bool all_done = !pod.containers.empty(), all_ok = true, all_running = pod.started,
       all_ready = pod.started;
  json statuses = json::array();
  for (const auto& c : pod.containers) {
    all_done = all_done && c.done;
    all_ok = all_ok && c.done && c.exit_code == 0;
    all_running = all_running && c.running;
    all_ready = all_ready && c.running && c.ready;
    json state;
    const std::string id = "sim://" + std::to_string(c.pid);
    if (c.crash_looping) {
      state = {
          {"waiting",
           {{"reason", "CrashLoopBackOff"},
            {"message", "back-off restarting failed container " + c.name + ": " + c.message}}}};
    } else if (c.running) {
      state = {{"running", {{"startedAt", c.started_at}}}};
    } else {
      json t = {{"exitCode", c.exit_code},
                {"reason", c.reason},
                {"startedAt", c.started_at},
                {"finishedAt", c.finished_at},
                {"containerID", id}};
      if (!c.message.empty()) t["message"] = c.message;
      state = {{"terminated", t}};
    }
    std::string image;
    for (const auto& s : pod.spec["containers"])
      if (str(at(s, "name")) == c.name) image = str(at(s, "image"));
    statuses.push_back({{"name", c.name},
                        {"image", image},
                        {"imageID", ""},
                        {"containerID", id},
                        {"ready", c.running && c.ready},
                        {"started", c.running},
                        {"restartCount", c.restarts},
                        {"state", state},
                        {"lastState", c.last_state}});
  }
  // Container mode, not started: what each container waits for (the refused one's reason).
  if (!pod.started && !pod.waiting_reason.empty() && at(pod.spec, "containers").is_array())
    for (const auto& spec : pod.spec["containers"]) {
      const std::string name = str(at(spec, "name"));
      json waiting = {{"reason", "ContainerCreating"}};
      if (name == pod.waiting_container)
        waiting = {{"reason", pod.waiting_reason}, {"message", pod.waiting_message}};
      statuses.push_back({{"name", name},
                          {"image", str(at(spec, "image"))},
                          {"imageID", ""},
                          {"ready", false},
                          {"started", false},
                          {"restartCount", 0},
                          {"state", {{"waiting", waiting}}},
                          {"lastState", json::object()}});
    }
  const std::string phase =
      pod.lost
          ? "Failed"
          : (!pod.started ? "Pending" : (all_done ? (all_ok ? "Succeeded" : "Failed") : "Running"));
  const std::string now = now_text();
  try {
    store_.mutate(pods_r_, pod.ns, pod.name, WritePart::kStatus, [&](const json& current) {
      if (str(current["metadata"]["uid"]) != pod.uid) throw not_found(pods_r_, pod.name);
      json next = current;
      json& st = next["status"];
      if (!st.is_object()) st = json::object();
      st["phase"] = phase;
      st["hostIP"] = pod.host_ip;
      st["hostIPs"] = {{{"ip", pod.host_ip}}};
      st["podIP"] = pod.pod_ip;
      st["podIPs"] = {{{"ip", pod.pod_ip}}};
      st["startTime"] = pod.start_time;
      st["qosClass"] = "BestEffort";
      st["containerStatuses"] = statuses;
      // Conditions: keep PodScheduled (the scheduler's); set the kubelet's own.
      std::map<std::string, json> old;
      if (st.contains("conditions") && st["conditions"].is_array())
        for (const auto& c : st["conditions"]) old[str(at(c, "type"))] = c;
      auto cond = [&](const std::string& type, bool ok, const std::string& reason) {
        json c = {{"type", type}, {"status", ok ? "True" : "False"}, {"lastProbeTime", nullptr}};
        if (!reason.empty()) c["reason"] = reason;
        auto it = old.find(type);
        c["lastTransitionTime"] = it != old.end() && it->second.value("status", "") == c["status"]
                                      ? it->second.value("lastTransitionTime", now)
                                      : now;
        return c;
      };
      const std::string not_ready = all_done ? "PodCompleted" : "ContainersNotReady";
      json conditions = json::array();
      conditions.push_back(cond("PodReadyToStartContainers", !all_done, ""));
      conditions.push_back(cond("Initialized", true, all_done ? "PodCompleted" : ""));
      conditions.push_back(cond("Ready", all_ready, all_ready ? "" : not_ready));
      conditions.push_back(cond("ContainersReady", all_ready, all_ready ? "" : not_ready));
      if (old.count("PodScheduled") > 0) conditions.push_back(old["PodScheduled"]);
      if (pod.lost) {
        json target = cond("DisruptionTarget", true, "DeletionByTaintManager");
        target["message"] = "Taint manager: deleting due to NoExecute taint";
        conditions.push_back(target);
        st["reason"] = "NodeLost";
        st["message"] =
            "Node " + pod.node + " which was running pod " + pod.name + " is unresponsive";
      }
      st["conditions"] = conditions;
      return next;
    });
  } catch (const ApiError&) {
    // Deleted (or replaced) meanwhile: nobody is left to read this status.
  }
}

}  // namespace commgate::sim
