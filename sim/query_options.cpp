#include "sim/query_options.h"

#include <cstdio>
#include <limits>

#include "sim/api_status.h"

namespace commgate::sim {
namespace {

// strconv.Quote for the bytes a query value can hold: printable ASCII and UTF-8 kept,
// quotes and backslashes escaped, control bytes as Go writes them. Not JSON's escaping
// (core/json_write.h's append_json_string): Go writes \a, \v, \x01 and \x7f where JSON has
// \u0007, \u000b, \u0001 and a raw DEL, so the message reads as kube-apiserver's does.
std::string go_quote(std::string_view s) {
  std::string out = "\"";
  for (const unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\a':
        out += "\\a";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\v':
        out += "\\v";
        break;
      default:
        if (c < 0x20 || c == 0x7f) {
          char hex[5];
          std::snprintf(hex, sizeof hex, "\\x%02x", c);
          out += hex;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

GoInt64 parse_error(std::string_view text, const char* what) {
  return {std::nullopt, "strconv.ParseInt: parsing " + go_quote(text) + ": " + what};
}

}  // namespace

bool go_query_bool(std::string_view value) {
  if (value == "0") return false;
  if (value.size() != 5) return true;
  static constexpr std::string_view kFalse = "false";
  for (std::size_t i = 0; i < 5; ++i) {
    const char c = value[i];
    const char lower = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
    if (lower != kFalse[i]) return true;
  }
  return false;
}

GoInt64 go_parse_int64(std::string_view text) {
  std::string_view digits = text;
  bool negative = false;
  if (!digits.empty() && (digits[0] == '+' || digits[0] == '-')) {
    negative = digits[0] == '-';
    digits.remove_prefix(1);
  }
  if (digits.empty()) return parse_error(text, "invalid syntax");
  // ParseUint's scan: the first bad byte or the first overflow, whichever comes first.
  constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
  constexpr uint64_t kCutoff = kMax / 10 + 1;
  uint64_t n = 0;
  for (const char c : digits) {
    if (c < '0' || c > '9') return parse_error(text, "invalid syntax");
    if (n >= kCutoff) return parse_error(text, "value out of range");
    n *= 10;
    const uint64_t next = n + static_cast<uint64_t>(c - '0');
    if (next < n) return parse_error(text, "value out of range");
    n = next;
  }
  constexpr uint64_t kLimit = uint64_t{1} << 63;  // |INT64_MIN|
  if (!negative && n >= kLimit) return parse_error(text, "value out of range");
  if (negative && n > kLimit) return parse_error(text, "value out of range");
  if (negative)
    return {n == kLimit ? std::numeric_limits<int64_t>::min() : -static_cast<int64_t>(n), ""};
  return {static_cast<int64_t>(n), ""};
}

bool query_bool(const server::Request& request, std::string_view name) {
  return query_optional_bool(request, name).value_or(false);
}

std::optional<bool> query_optional_bool(const server::Request& request, std::string_view name) {
  const auto value = request.find_query_param(name);
  if (!value) return std::nullopt;
  return go_query_bool(*value);
}

std::optional<int64_t> query_int64(const server::Request& request, std::string_view name) {
  const auto text = request.find_query_param(name);
  if (!text) return std::nullopt;
  GoInt64 parsed = go_parse_int64(*text);
  if (!parsed.value) throw bad_request(parsed.error);
  return parsed.value;
}

// In the order of the generated url.Values conversions, so that the first bad value is
// the one upstream reports.
ListQuery decode_list_query(const server::Request& request) {
  ListQuery q;
  q.watch = query_bool(request, "watch");
  q.allow_watch_bookmarks = query_bool(request, "allowWatchBookmarks");
  q.timeout_seconds = query_int64(request, "timeoutSeconds");
  q.limit = query_int64(request, "limit").value_or(0);
  q.send_initial_events = query_optional_bool(request, "sendInitialEvents");
  return q;
}

DeleteQuery decode_delete_query(const server::Request& request) {
  DeleteQuery q;
  q.grace_period_seconds = query_int64(request, "gracePeriodSeconds");
  q.orphan_dependents = query_optional_bool(request, "orphanDependents");
  return q;
}

}  // namespace commgate::sim
