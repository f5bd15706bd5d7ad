#include "core/link_rate.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "core/object_reader.h"

namespace commgate {
namespace {

std::string_view trimmed(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// A finite number > 0 spelling the whole of `s`.
std::optional<double> positive_number(std::string_view s) {
  double v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || !std::isfinite(v) || v <= 0)
    return std::nullopt;
  return v;
}

}  // namespace

std::optional<double> parse_ethernet_speed(std::string_view text) {
  const auto mbps = positive_number(trimmed(text));
  if (!mbps) return std::nullopt;
  return *mbps * 1e6;
}

std::optional<double> parse_infiniband_rate(std::string_view text) {
  // "<number> Gb/sec" and, after it, the width and speed in parentheses.
  text = trimmed(text);
  const auto space = text.find(' ');
  if (space == std::string_view::npos) return std::nullopt;
  const auto gbps = positive_number(text.substr(0, space));
  if (!gbps || text.substr(space + 1).rfind("Gb/sec", 0) != 0) return std::nullopt;
  return *gbps * 1e9;
}

std::string encode_node_link(const NodeLink& link) {
  char out[64];
  std::snprintf(out, sizeof out, "%.17g,%d", link.rate_bits_per_s, link.infiniband_present ? 1 : 0);
  return out;
}

std::optional<NodeLink> decode_node_link(std::string_view text) {
  const auto comma = text.find(',');
  if (comma == std::string_view::npos) return std::nullopt;
  const std::string_view rate = text.substr(0, comma), ib = text.substr(comma + 1);
  if (ib != "0" && ib != "1") return std::nullopt;
  NodeLink link;
  link.infiniband_present = ib == "1";
  if (rate != "0") {
    const auto v = positive_number(rate);
    if (!v) return std::nullopt;
    link.rate_bits_per_s = *v;
  }
  return link;
}

PoolLink combine_node_links(const std::vector<NodeLink>& by_rank) {
  PoolLink pool;
  pool.ranks = static_cast<int>(by_rank.size());
  for (const NodeLink& n : by_rank) {
    pool.infiniband_present = pool.infiniband_present || n.infiniband_present;
    if (n.rate_bits_per_s <= 0) continue;
    pool.rate_bits_per_s = pool.ranks_known == 0
                               ? n.rate_bits_per_s
                               : std::min(pool.rate_bits_per_s, n.rate_bits_per_s);
    ++pool.ranks_known;
  }
  return pool;
}

nlohmann::json to_json(const PoolLink& link) {
  return {{"rateBitsPerSecond", link.rate_bits_per_s},
          {"ranksKnown", link.ranks_known},
          {"ranks", link.ranks},
          {"infinibandPresent", link.infiniband_present}};
}

PoolLink read_pool_link(ObjectReader& object) {
  using P = Presence;
  PoolLink link;
  link.rate_bits_per_s = object.number("rateBitsPerSecond", P::kRequired, 0.0).value_or(0);
  link.ranks = static_cast<int>(object.integer("ranks", P::kRequired, 0, 100000).value_or(0));
  link.ranks_known =
      static_cast<int>(object.integer("ranksKnown", P::kRequired, 0, 100000).value_or(0));
  link.infiniband_present = object.boolean("infinibandPresent", P::kOptional).value_or(false);
  return link;
}

}  // namespace commgate
