#include "sim/managed_fields.h"

#include <stdexcept>

namespace commgate::sim {

using nlohmann::json;

bool FieldSet::empty() const {
  if (member) return false;
  for (const auto& [k, child] : children)
    if (!child.empty()) return false;
  return true;
}

void FieldSet::insert(const FieldPath& path) {
  FieldSet* node = this;
  for (const auto& e : path) node = &node->children[e];
  node->member = true;
}

bool FieldSet::has(const FieldPath& path) const {
  const FieldSet* node = this;
  for (const auto& e : path) {
    auto it = node->children.find(e);
    if (it == node->children.end()) return false;
    node = &it->second;
  }
  return node->member;
}

bool FieldSet::has_member_below(const FieldPath& path) const {
  const FieldSet* node = this;
  for (const auto& e : path) {
    auto it = node->children.find(e);
    if (it == node->children.end()) return false;
    node = &it->second;
  }
  for (const auto& [k, child] : node->children)
    if (!child.empty()) return true;
  return false;
}

namespace {

void mf_collect(const FieldSet& s, FieldPath& prefix, std::vector<FieldPath>& out) {
  if (s.member && !prefix.empty()) out.push_back(prefix);
  for (const auto& [k, child] : s.children) {
    prefix.push_back(k);
    mf_collect(child, prefix, out);
    prefix.pop_back();
  }
}

void mf_prune_empty(FieldSet& s) {
  for (auto it = s.children.begin(); it != s.children.end();) {
    mf_prune_empty(it->second);
    if (it->second.empty()) {
      it = s.children.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace

std::vector<FieldPath> FieldSet::paths() const {
  std::vector<FieldPath> out;
  FieldPath prefix;
  mf_collect(*this, prefix, out);
  return out;
}

FieldSet field_set_union(const FieldSet& a, const FieldSet& b) {
  FieldSet out = a;
  out.member = a.member || b.member;
  for (const auto& [k, child] : b.children) {
    auto it = out.children.find(k);
    out.children[k] = it == out.children.end() ? child : field_set_union(it->second, child);
  }
  mf_prune_empty(out);
  return out;
}

FieldSet field_set_difference(const FieldSet& a, const FieldSet& b) {
  FieldSet out;
  out.member = a.member && !b.member;
  for (const auto& [k, child] : a.children) {
    auto it = b.children.find(k);
    out.children[k] = it == b.children.end() ? child : field_set_difference(child, it->second);
  }
  mf_prune_empty(out);
  return out;
}

FieldSet field_set_recursive_difference(const FieldSet& a, const FieldSet& b) {
  FieldSet out;
  out.member = a.member && !b.member;
  for (const auto& [k, child] : a.children) {
    auto it = b.children.find(k);
    if (it == b.children.end()) {
      out.children[k] = child;
    } else if (!it->second.member) {
      out.children[k] = field_set_recursive_difference(child, it->second);
    }
  }
  mf_prune_empty(out);
  return out;
}

FieldSet field_set_intersection(const FieldSet& a, const FieldSet& b) {
  FieldSet out;
  out.member = a.member && b.member;
  for (const auto& [k, child] : a.children) {
    auto it = b.children.find(k);
    if (it != b.children.end()) out.children[k] = field_set_intersection(child, it->second);
  }
  mf_prune_empty(out);
  return out;
}

json to_fields_v1(const FieldSet& set) {
  json out = json::object();
  for (const auto& [k, child] : set.children) {
    if (child.empty()) continue;
    json c = to_fields_v1(child);
    if (child.member && !c.empty()) c["."] = json::object();
    out[k] = std::move(c);
  }
  return out;
}

namespace {

void mf_decode(const json& fields, FieldSet& into) {
  if (!fields.is_object()) throw std::runtime_error("FieldsV1: expected an object");
  for (const auto& [k, v] : fields.items()) {
    if (k == ".") {
      into.member = true;
      continue;
    }
    if (k.size() < 2 || k[1] != ':' || std::string("fkvi").find(k[0]) == std::string::npos)
      throw std::runtime_error("FieldsV1: unknown path element \"" + k + "\"");
    FieldSet& child = into.children[k];
    if (!v.is_object()) throw std::runtime_error("FieldsV1: expected an object");
    if (v.empty()) {
      child.member = true;
    } else {
      mf_decode(v, child);
    }
  }
}

}  // namespace

FieldSet from_fields_v1(const json& fields) {
  FieldSet out;
  mf_decode(fields, out);
  return out;
}

std::string field_element(const std::string& name) {
  return "f:" + name;
}
std::string key_element(const json& keys) {
  return "k:" + keys.dump();
}
std::string value_element(const json& value) {
  return "v:" + value.dump();
}
std::string index_element(std::size_t index) {
  return "i:" + std::to_string(index);
}

std::string path_string(const FieldPath& path) {
  std::string out;
  for (const auto& e : path) {
    const std::string rest = e.substr(2);
    switch (e[0]) {
      case 'f':
        out += "." + rest;
        break;
      case 'k': {
        const json keys = json::parse(rest);
        out += "[";
        bool first = true;
        for (const auto& [name, value] : keys.items()) {
          out += (first ? "" : ",") + name + "=" + value.dump();
          first = false;
        }
        out += "]";
        break;
      }
      case 'v':
        out += "[=" + rest + "]";
        break;
      default:
        out += "[" + rest + "]";
    }
  }
  return out;
}

}  // namespace commgate::sim
