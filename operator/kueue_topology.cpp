#include "operator/kueue_topology.h"

#include <cstdint>
#include <limits>

#include "core/field_errors.h"

namespace commgate::op::kueue {
namespace {

constexpr int64_t kTopologyInt32Max = std::numeric_limits<int32_t>::max();

// One level's values in one slice: a universal value, or prefix + roots[i] + suffix.
struct TopologyLevelValues {
  std::optional<std::string> universal;
  std::string prefix;
  std::string suffix;
  std::vector<std::string> roots;

  std::string at(size_t i) const { return universal ? *universal : prefix + roots[i] + suffix; }
};

struct TopologySlice {
  int64_t domain_count = 0;
  std::vector<TopologyLevelValues> levels;
  std::optional<int64_t> universal_count;
  std::vector<int64_t> counts;

  int64_t count_at(size_t i) const { return universal_count ? *universal_count : counts[i]; }
};

// "exactly one of the fields in [universal individual] must be set", as Kueue's CEL rule
// and ExactlyOneOf marker say it.
bool topology_exactly_one(ObjectReader& r, const Json* universal, const Json* individual) {
  if ((universal != nullptr) == (individual != nullptr)) {
    r.errors().add(r.path(), std::string("exactly one of universal, individual must be set, got ") +
                                 (universal ? "both" : "neither"));
    return false;
  }
  return true;
}

std::optional<TopologyLevelValues> topology_read_level(ObjectReader& level, int64_t domain_count) {
  const size_t before = level.errors().size();
  const Json* universal = level.raw("universal");
  const Json* individual = level.raw("individual");
  if (!topology_exactly_one(level, universal, individual)) return std::nullopt;
  TopologyLevelValues out;
  if (universal) {
    out.universal = level.string("universal", Presence::kOptional, true);
  } else {
    auto ind = level.object("individual");
    out.prefix = ind.string("prefix", Presence::kOptional, true).value_or("");
    out.suffix = ind.string("suffix", Presence::kOptional, true).value_or("");
    out.roots = ind.string_list("roots", Presence::kRequired).value_or(std::vector<std::string>{});
    if (ind.raw("roots") && level.errors().size() == before &&
        static_cast<int64_t>(out.roots.size()) != domain_count)
      ind.errors().add(ind.path_of("roots"),
                       "has " + std::to_string(out.roots.size()) + " values, but domainCount is " +
                           std::to_string(domain_count) + ": one value per domain");
  }
  if (level.errors().size() != before) return std::nullopt;
  return out;
}

bool topology_read_counts(ObjectReader& slice, TopologySlice& out) {
  const size_t before = slice.errors().size();
  auto counts = slice.object("podCounts", Presence::kRequired);
  if (!counts.present()) return false;
  const Json* universal = counts.raw("universal");
  const Json* individual = counts.raw("individual");
  if (!topology_exactly_one(counts, universal, individual)) return false;
  if (universal) {
    out.universal_count = counts.integer("universal", Presence::kOptional, 1, kTopologyInt32Max);
  } else if (!individual->is_array()) {
    counts.errors().add(counts.path_of("individual"),
                        "must be a list of pod counts, got " + describe_json(*individual));
  } else if (static_cast<int64_t>(individual->size()) != out.domain_count) {
    counts.errors().add(counts.path_of("individual"), "has " + std::to_string(individual->size()) +
                                                          " pod counts, but domainCount is " +
                                                          std::to_string(out.domain_count) +
                                                          ": one count per domain");
  } else {
    for (size_t i = 0; i < individual->size(); ++i) {
      const Json& c = (*individual)[i];
      const std::string path = index_path(counts.path_of("individual"), i);
      if (!c.is_number_integer() || c.get<int64_t>() < 1 || c.get<int64_t>() > kTopologyInt32Max)
        counts.errors().add(path, "must be a pod count >= 1, got " + describe_json(c));
      else
        out.counts.push_back(c.get<int64_t>());
    }
  }
  return slice.errors().size() == before;
}

}  // namespace

bool TopologyAssignment::lowest_level_is_hostname() const {
  return !levels.empty() && levels.back() == kHostnameLevel;
}

std::vector<std::string> TopologyAssignment::hostnames() const {
  std::vector<std::string> out;
  if (!lowest_level_is_hostname()) return out;
  out.reserve(domains.size());
  for (const TopologyDomain& d : domains) out.push_back(d.values.back());
  return out;
}

int64_t TopologyAssignment::pod_count() const {
  int64_t total = 0;
  for (const TopologyDomain& d : domains) total += d.pod_count;
  return total;
}

std::optional<TopologyAssignment> read_topology_assignment(ObjectReader& pod_set_assignment,
                                                           const std::string& key) {
  auto ta = pod_set_assignment.object(key);
  if (!ta.present()) return std::nullopt;
  FieldErrors& errors = ta.errors();
  const size_t before = errors.size();

  TopologyAssignment out;
  out.levels = ta.string_list("levels", Presence::kRequired).value_or(std::vector<std::string>{});
  if (ta.raw("levels") && out.levels.empty() && errors.size() == before)
    errors.add(ta.path_of("levels"), "must name at least one level (a node label key)");
  const bool levels_ok = errors.size() == before;

  std::vector<TopologySlice> slices;
  int64_t total_domains = 0;
  for (auto& slice : ta.object_list("slices", Presence::kRequired)) {
    const size_t slice_before = errors.size();
    TopologySlice s;
    s.domain_count =
        slice.integer("domainCount", Presence::kRequired, 1, kTopologyInt32Max).value_or(0);
    if (s.domain_count > 0) {
      total_domains += s.domain_count;
      if (total_domains > kMaxTopologyDomains)
        errors.add(slice.path_of("domainCount"),
                   "brings the assignment to " + std::to_string(total_domains) +
                       " domains, more than the " + std::to_string(kMaxTopologyDomains) +
                       " commgate reads (it decides for at most 10000 nodes)");
    }
    auto values = slice.object_list("valuesPerLevel", Presence::kRequired);
    if (levels_ok && slice.raw("valuesPerLevel") && values.size() != out.levels.size())
      errors.add(slice.path_of("valuesPerLevel"),
                 "has " + std::to_string(values.size()) + " entries, but the assignment has " +
                     std::to_string(out.levels.size()) + " levels: one entry per level");
    // Without a domain count the lengths cannot be judged: reported once, at domainCount.
    if (s.domain_count > 0) {
      for (auto& level : values)
        if (auto v = topology_read_level(level, s.domain_count)) s.levels.push_back(std::move(*v));
      topology_read_counts(slice, s);
    }
    if (errors.size() == slice_before) slices.push_back(std::move(s));
  }
  if (errors.size() != before) return std::nullopt;

  out.domains.reserve(static_cast<size_t>(total_domains));
  for (const TopologySlice& s : slices) {
    for (size_t i = 0; i < static_cast<size_t>(s.domain_count); ++i) {
      TopologyDomain d;
      d.values.reserve(s.levels.size());
      for (const TopologyLevelValues& level : s.levels) d.values.push_back(level.at(i));
      d.pod_count = s.count_at(i);
      out.domains.push_back(std::move(d));
    }
  }
  return out;
}

TopologyAssignment decode_topology_assignment(const nlohmann::json& assignment,
                                              const std::string& path) {
  FieldErrors errors;
  // A parent holding the assignment under its last path step, so that the reader's paths
  // are the caller's.
  const size_t dot = path.rfind('.');
  const std::string parent = dot == std::string::npos ? "" : path.substr(0, dot);
  const std::string key = dot == std::string::npos ? path : path.substr(dot + 1);
  const Json holder = {{key, assignment}};
  ObjectReader reader(&holder, parent, errors);
  std::optional<TopologyAssignment> out = read_topology_assignment(reader, key);
  if (!out && errors.empty()) errors.add(path, "required field is missing");
  errors.throw_if_any("invalid topologyAssignment");
  return std::move(*out);
}

}  // namespace commgate::op::kueue
