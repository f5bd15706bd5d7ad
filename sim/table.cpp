#include "sim/table.h"

#include "sim/pod_columns.h"

namespace commgate::sim {
namespace {

using nlohmann::json;

json column(const std::string& name, const std::string& type, const std::string& format,
            const std::string& description, int priority) {
  return {{"name", name},
          {"type", type},
          {"format", format},
          {"description", description},
          {"priority", priority}};
}

std::string age(const json& object, TimePoint now) {
  const auto created = parse_rfc3339(object["metadata"].value("creationTimestamp", std::string()));
  if (!created) return "<unknown>";
  return human_duration(std::chrono::duration_cast<std::chrono::seconds>(now - *created));
}

json cell(const json& col, const json& object, TimePoint now) {
  if (col.contains("compute")) return pod_column(col.value("compute", ""), object);
  json value = json_path_value(object, col.value("jsonPath", ""));
  const std::string type = col.value("type", "string");
  if (type == "date" && value.is_string()) {
    const auto t = parse_rfc3339(value.get<std::string>());
    if (t) return human_duration(std::chrono::duration_cast<std::chrono::seconds>(now - *t));
  }
  if (value.is_object() || value.is_array()) return value.dump();
  return value;
}

}  // namespace

std::string human_duration(std::chrono::seconds d) {
  const long long s = d.count();
  if (s < -1) return "<invalid>";
  if (s < 0) return "0s";
  if (s < 120) return std::to_string(s) + "s";
  const long long m = s / 60;
  if (m < 10) {
    return s % 60 == 0 ? std::to_string(m) + "m"
                       : std::to_string(m) + "m" + std::to_string(s % 60) + "s";
  }
  if (m < 180) return std::to_string(m) + "m";
  const long long h = s / 3600;
  if (h < 8) {
    return m % 60 == 0 ? std::to_string(h) + "h"
                       : std::to_string(h) + "h" + std::to_string(m % 60) + "m";
  }
  if (h < 48) return std::to_string(h) + "h";
  if (h < 24 * 8) {
    return h % 24 == 0 ? std::to_string(h / 24) + "d"
                       : std::to_string(h / 24) + "d" + std::to_string(h % 24) + "h";
  }
  if (h < 24 * 365 * 2) return std::to_string(h / 24) + "d";
  return std::to_string(h / 24 / 365) + "y";
}

json json_path_value(const json& object, const std::string& path) {
  const json* cur = &object;
  size_t i = 0;
  while (i < path.size()) {
    if (path[i] == '.') {
      ++i;
      continue;
    }
    if (path[i] == '[') {
      const auto close = path.find(']', i);
      if (close == std::string::npos || !cur->is_array()) return nullptr;
      const std::string idx = path.substr(i + 1, close - i - 1);
      // A filter, as kube's JSONPath reads it in printer columns:
      // [?(@.type=="Probing")] (or =='Probing') picks the first element whose field
      // equals the string.
      if (idx.starts_with("?(@.") && idx.ends_with(")")) {
        const std::string test = idx.substr(4, idx.size() - 5);
        const auto eq = test.find("==");
        if (eq == std::string::npos) return nullptr;
        const std::string field = test.substr(0, eq);
        std::string want = test.substr(eq + 2);
        // Either quote, as kube's JSONPath takes: Kueue's CRDs write =='Admitted'.
        if (want.size() < 2 || (want.front() != '"' && want.front() != '\'') ||
            want.back() != want.front())
          return nullptr;
        want = want.substr(1, want.size() - 2);
        const json* found = nullptr;
        for (const json& item : *cur) {
          if (item.is_object() && item.contains(field) && item[field] == json(want)) {
            found = &item;
            break;
          }
        }
        if (found == nullptr) return nullptr;
        cur = found;
        i = close + 1;
        continue;
      }
      size_t n = 0;
      try {
        n = std::stoul(idx);
      } catch (const std::exception&) {
        return nullptr;
      }
      if (n >= cur->size()) return nullptr;
      cur = &(*cur)[n];
      i = close + 1;
      continue;
    }
    // A key ends at an unescaped '.' or '['; a backslash escapes the next character, as
    // in kube's JSONPath: .metadata.annotations.commgate\.io/decision
    std::string key;
    while (i < path.size() && path[i] != '.' && path[i] != '[') {
      if (path[i] == '\\' && i + 1 < path.size()) ++i;
      key += path[i++];
    }
    if (!cur->is_object() || !cur->contains(key)) return nullptr;
    cur = &(*cur)[key];
  }
  return *cur;
}

json to_table(const ResourceInfo& r, const std::vector<json>& objects,
              const std::string& resource_version, const std::string& include_object,
              TimePoint now) {
  json columns = json::array();
  columns.push_back(column("Name", "string", "name",
                           "Name must be unique within a namespace. More info: "
                           "http://kubernetes.io/docs/user-guide/identifiers#names",
                           0));
  const json& extra = r.printer_columns;
  // CRDs: Age only when they declare no columns (upstream); built-ins always end in Age.
  // A built-in whose columns place Age themselves (pods: before the wide ones) has no
  // other.
  bool placed_age = false;
  for (const auto& c : extra) placed_age = placed_age || c.value("name", "") == "Age";
  const bool default_age = (!r.custom || extra.empty()) && !placed_age;
  for (const auto& c : extra)
    columns.push_back(column(c.value("name", ""), c.value("type", "string"), c.value("format", ""),
                             c.value("description", ""), c.value("priority", 0)));
  if (default_age)
    columns.push_back(column("Age", "date", "",
                             "CreationTimestamp is a timestamp representing the server time "
                             "when this object was created.",
                             0));
  json rows = json::array();
  for (const auto& obj : objects) {
    json cells = json::array();
    cells.push_back(obj["metadata"].value("name", ""));
    for (const auto& c : extra) cells.push_back(cell(c, obj, now));
    if (default_age) cells.push_back(age(obj, now));
    json row = {{"cells", cells}};
    if (include_object == "Object") {
      row["object"] = obj;
    } else if (include_object != "None") {
      row["object"] = {{"kind", "PartialObjectMetadata"},
                       {"apiVersion", "meta.k8s.io/v1"},
                       {"metadata", obj["metadata"]}};
    }
    rows.push_back(row);
  }
  return {{"kind", "Table"},
          {"apiVersion", "meta.k8s.io/v1"},
          {"metadata", {{"resourceVersion", resource_version}}},
          {"columnDefinitions", columns},
          {"rows", rows}};
}

}  // namespace commgate::sim
