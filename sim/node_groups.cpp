#include "sim/node_groups.h"

#include <cctype>
#include <regex>
#include <stdexcept>

namespace commgate::sim {
namespace {

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> out;
  for (std::size_t from = 0;;) {
    const auto at = text.find(sep, from);
    out.push_back(text.substr(from, at == std::string::npos ? std::string::npos : at - from));
    if (at == std::string::npos) return out;
    from = at + 1;
  }
}

int parse_count(const std::string& text, const std::string& what, int min, int max) {
  std::size_t used = 0;
  int v = 0;
  try {
    v = std::stoi(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (text.empty() || used != text.size() || !std::isdigit(static_cast<unsigned char>(text[0])) ||
      v < min || v > max)
    throw std::invalid_argument(what + " must be a whole number " + std::to_string(min) + ".." +
                                std::to_string(max) + ", got \"" + text + "\"");
  return v;
}

// k8s.io/apimachinery validation: IsQualifiedName for keys, IsValidLabelValue for values.
void check_label(const std::string& key, const std::string& value, const std::string& entry) {
  static const std::regex kName("([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9]");
  static const std::regex kPrefix(
      "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*");
  const auto slash = key.find('/');
  const std::string name = slash == std::string::npos ? key : key.substr(slash + 1);
  const bool prefix_ok =
      slash == std::string::npos ||
      (slash > 0 && slash <= 253 && std::regex_match(key.substr(0, slash), kPrefix));
  if (!prefix_ok || name.size() > 63 || !std::regex_match(name, kName))
    throw std::invalid_argument("label \"" + entry + "\": \"" + key +
                                "\" is not a label key ([prefix/]name, name at most 63 "
                                "characters of [A-Za-z0-9._-], alphanumeric at both ends)");
  if (!value.empty() && (value.size() > 63 || !std::regex_match(value, kName)))
    throw std::invalid_argument("label \"" + entry + "\": \"" + value +
                                "\" is not a label value (at most 63 characters of "
                                "[A-Za-z0-9._-], alphanumeric at both ends)");
}

void add_label(std::map<std::string, std::string>& labels, const std::string& entry) {
  const auto eq = entry.find('=');
  if (eq == std::string::npos)
    throw std::invalid_argument("label \"" + entry + "\" must be KEY=VALUE");
  const std::string key = entry.substr(0, eq), value = entry.substr(eq + 1);
  check_label(key, value, entry);
  labels[key] = value;
}

}  // namespace

std::map<std::string, std::string> parse_node_labels(const std::string& text) {
  std::map<std::string, std::string> labels;
  for (const auto& entry : split(text, ',')) add_label(labels, entry);
  return labels;
}

NodeGroup parse_node_group(const std::string& text) {
  const auto items = split(text, ',');
  NodeGroup group;
  group.count = parse_count(items[0], "--node-group \"" + text + "\": the node count", 1, 200);
  for (std::size_t i = 1; i < items.size(); ++i) {
    const std::string& item = items[i];
    const auto eq = item.find('=');
    const std::string key = item.substr(0, eq);
    const std::string value = eq == std::string::npos ? "" : item.substr(eq + 1);
    if (eq == std::string::npos || value.empty())
      throw std::invalid_argument("--node-group \"" + text + "\": item \"" + item +
                                  "\" must be gpus=G, netns=PREFIX or label=K=V");
    if (key == "gpus") {
      group.gpus = parse_count(value, "--node-group \"" + text + "\": gpus", 0, 1024);
    } else if (key == "netns") {
      // netsim.sh's NETSIM_PREFIX rule.
      static const std::regex kPrefix("[a-z0-9]{1,8}");
      if (!std::regex_match(value, kPrefix))
        throw std::invalid_argument("--node-group \"" + text +
                                    "\": netns must be 1-8 lowercase letters or digits (as "
                                    "NETSIM_PREFIX), got \"" +
                                    value + "\"");
      group.netns_prefix = value;
    } else if (key == "label") {
      add_label(group.labels, value);
    } else {
      throw std::invalid_argument("--node-group \"" + text + "\": unknown item \"" + key +
                                  "\" (gpus, netns, label)");
    }
  }
  return group;
}

std::vector<NodeSpec> node_specs(const std::vector<NodeGroup>& groups) {
  std::vector<NodeSpec> nodes;
  for (const auto& group : groups)
    for (int j = 0; j < group.count; ++j) {
      NodeSpec node = node_spec("sim-node-" + std::to_string(nodes.size()), group.gpus);
      node.labels = group.labels;
      if (!group.netns_prefix.empty()) {
        node.netns = group.netns_prefix + "-n" + std::to_string(j);
        node.address = "198.18.0." + std::to_string(j + 1);
        node.pod_cidr = "198.19." + std::to_string(j) + ".0/24";  // scripts/netsim.sh's
      }
      nodes.push_back(std::move(node));
    }
  return nodes;
}

}  // namespace commgate::sim
