#include "kube/cached_reader.h"

#include <stdexcept>

#include "kube/api_error.h"

namespace commgate::kube {
namespace {

using nlohmann::json;

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t at = text.find(sep, start);
    out.push_back(text.substr(start, at == std::string::npos ? std::string::npos : at - start));
    if (at == std::string::npos) return out;
    start = at + 1;
  }
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

// Splits on commas outside parentheses ("a in (x,y),b" -> "a in (x,y)", "b").
std::vector<std::string> split_terms(const std::string& text) {
  std::vector<std::string> out;
  std::string cur;
  int depth = 0;
  for (char c : text) {
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (c == ',' && depth == 0) {
      out.push_back(trim(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(trim(cur));
  return out;
}

ApiError bad_selector(const std::string& text, const std::string& why) {
  return ApiError(400, "BadRequest", "unable to parse requirement: " + why,
                  "labelSelector \"" + text + "\"");
}

std::map<std::string, std::string> labels_of(const json& object) {
  std::map<std::string, std::string> out;
  static const json::json_pointer kLabels("/metadata/labels");
  if (!object.contains(kLabels) || !object.at(kLabels).is_object()) return out;
  for (const auto& [k, v] : object.at(kLabels).items())
    if (v.is_string()) out[k] = v.get<std::string>();
  return out;
}

// kube-apiserver's message: `jobs.batch "a" not found`, `namespaces "x" not found`.
ApiError not_found(const ApiPath& p, const std::string& path) {
  std::string group;
  if (p.prefix.rfind("/apis/", 0) == 0) group = split(p.prefix.substr(6), '/').front();
  const std::string what = group.empty() ? p.resource : p.resource + "." + group;
  return ApiError(404, "NotFound", what + " \"" + p.name + "\" not found", "GET " + path);
}

}  // namespace

std::optional<ApiPath> parse_api_path(const std::string& path) {
  if (path.find('?') != std::string::npos || path.empty() || path.front() != '/')
    return std::nullopt;
  std::vector<std::string> parts = split(path.substr(1), '/');
  for (const auto& part : parts)
    if (part.empty()) return std::nullopt;
  ApiPath out;
  size_t rest = 0;
  if (parts.size() >= 2 && parts[0] == "api") {
    out.prefix = "/api/" + parts[1];
    rest = 2;
  } else if (parts.size() >= 3 && parts[0] == "apis") {
    out.prefix = "/apis/" + parts[1] + "/" + parts[2];
    rest = 3;
  } else {
    return std::nullopt;
  }
  const std::vector<std::string> s(parts.begin() + static_cast<long>(rest), parts.end());
  // A namespace's own subresources (/api/v1/namespaces/x/status) look like a namespaced
  // collection; Kubernetes has no resources named so.
  const bool namespace_subresource =
      s.size() == 3 && s[0] == "namespaces" && (s[2] == "status" || s[2] == "finalize");
  if (s.size() >= 3 && s[0] == "namespaces" && !namespace_subresource) {
    if (s.size() > 5) return std::nullopt;
    out.ns = s[1];
    out.resource = s[2];
    if (s.size() >= 4) out.name = s[3];
    if (s.size() == 5) out.subresource = s[4];
    return out;
  }
  if (s.empty() || s.size() > 3) return std::nullopt;
  out.resource = s[0];
  if (s.size() >= 2) out.name = s[1];
  if (s.size() == 3) out.subresource = s[2];
  return out;
}

LabelSelector parse_label_selector_query(const std::string& text) {
  LabelSelector out;
  if (trim(text).empty()) return out;
  for (const std::string& term : split_terms(text)) {
    if (term.empty()) throw bad_selector(text, "empty term");
    const auto paren = term.find('(');
    if (paren != std::string::npos) {
      if (term.back() != ')') throw bad_selector(text, "\"" + term + "\" lacks its ')'");
      const std::string head = trim(term.substr(0, paren));
      const auto space = head.find_last_of(' ');
      if (space == std::string::npos)
        throw bad_selector(text, "\"" + term + "\" has no operator (in, notin)");
      LabelRequirement r;
      r.key = trim(head.substr(0, space));
      const std::string op = trim(head.substr(space + 1));
      if (op != "in" && op != "notin")
        throw bad_selector(text, "unknown operator \"" + op + "\" in \"" + term + "\"");
      r.op = op == "in" ? "In" : "NotIn";
      for (const auto& v : split_terms(term.substr(paren + 1, term.size() - paren - 2)))
        r.values.push_back(v);
      if (r.key.empty()) throw bad_selector(text, "\"" + term + "\" has no key");
      out.match_expressions.push_back(std::move(r));
    } else if (const auto ne = term.find("!="); ne != std::string::npos) {
      LabelRequirement r{trim(term.substr(0, ne)), "NotIn", {trim(term.substr(ne + 2))}};
      if (r.key.empty()) throw bad_selector(text, "\"" + term + "\" has no key");
      out.match_expressions.push_back(std::move(r));
    } else if (const auto eq = term.find('='); eq != std::string::npos) {
      const std::string key = trim(term.substr(0, eq));
      const size_t value_at = term.compare(eq, 2, "==") == 0 ? eq + 2 : eq + 1;
      const std::string value = trim(term.substr(value_at));
      if (key.empty()) throw bad_selector(text, "\"" + term + "\" has no key");
      auto [it, fresh] = out.match_labels.emplace(key, value);
      // Two different values for one key match nothing; keep both as In terms.
      if (!fresh && it->second != value) out.match_expressions.push_back({key, "In", {value}});
    } else if (term.front() == '!') {
      const std::string key = trim(term.substr(1));
      if (key.empty()) throw bad_selector(text, "\"" + term + "\" has no key");
      out.match_expressions.push_back({key, "DoesNotExist", {}});
    } else {
      if (term.find(' ') != std::string::npos)
        throw bad_selector(text, "\"" + term + "\" is not a key");
      out.match_expressions.push_back({term, "Exists", {}});
    }
  }
  return out;
}

CachedReader::CachedReader(std::vector<Source> sources, const Reader& fallback)
    : fallback_(fallback) {
  for (const Source& s : sources) {
    const auto path = parse_api_path(s.collection);
    if (!path || !path->name.empty() || !s.store)
      throw std::invalid_argument("CachedReader: \"" + s.collection +
                                  "\" is no collection path with a store");
    sources_.push_back({*path, s.store});
  }
}

const Store* CachedReader::store_for(const ApiPath& path) const {
  if (!path.subresource.empty()) return nullptr;
  for (const Covered& c : sources_) {
    if (c.path.prefix != path.prefix || c.path.resource != path.resource) continue;
    if (!c.path.ns.empty() && c.path.ns != path.ns) continue;
    return c.store->synced() ? c.store : nullptr;
  }
  return nullptr;
}

nlohmann::json CachedReader::get(const std::string& path) const {
  const auto parsed = parse_api_path(path);
  const Store* store = parsed && !parsed->name.empty() ? store_for(*parsed) : nullptr;
  if (!store) {
    ++fallback_reads_;
    return fallback_.get(path);
  }
  ++cache_reads_;
  const std::string key = parsed->ns.empty() ? parsed->name : parsed->ns + "/" + parsed->name;
  auto object = store->get(key);
  if (!object) throw not_found(*parsed, path);
  return *object;
}

ListPage CachedReader::list(const std::string& collection, const ListOptions& options) const {
  const auto parsed = parse_api_path(collection);
  const bool plain = options.field_selector.empty() && options.continue_token.empty();
  const Store* store = parsed && parsed->name.empty() && plain ? store_for(*parsed) : nullptr;
  if (!store) {
    ++fallback_reads_;
    return fallback_.list(collection, options);
  }
  ++cache_reads_;
  const LabelSelector selector = parse_label_selector_query(options.label_selector);
  ListPage page;
  // An equality on a label the store indexes narrows the candidates to that index entry
  // (the operator's pods by job name, issue #27); the whole selector is still applied.
  std::optional<std::vector<Store::Object>> candidates;
  for (const auto& [label, value] : selector.match_labels)
    if ((candidates = store->with_label(parsed->ns, label, value))) break;
  if (!candidates) candidates = store->list(parsed->ns);
  for (const Store::Object& stored : *candidates) {
    const nlohmann::json& object = *stored;
    if (!selector.empty() && !selector.matches(labels_of(object))) continue;
    page.items.push_back(object);
  }
  return page;
}

CachedReader::Counters CachedReader::counters() const {
  return {cache_reads_.load(), fallback_reads_.load()};
}

}  // namespace commgate::kube
