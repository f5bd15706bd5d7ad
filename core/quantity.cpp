#include "core/quantity.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <utility>
#include <vector>

namespace commgate {
namespace {

// Parses an unsigned decimal number with an optional fraction ("12", "1.5", ".5").
// Returns the number of characters consumed (0 if none).
size_t parse_decimal(std::string_view s, double* out) {
  size_t i = 0;
  double value = 0;
  bool digits = false;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
    value = value * 10 + (s[i] - '0');
    ++i;
    digits = true;
  }
  if (i < s.size() && s[i] == '.') {
    ++i;
    double scale = 0.1;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
      value += (s[i] - '0') * scale;
      scale /= 10;
      ++i;
      digits = true;
    }
  }
  if (!digits) return 0;
  *out = value;
  return i;
}

bool is_known_suffix(std::string_view s) {
  for (const char* name :
       {"", "n", "u", "m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"})
    if (s == name) return true;
  return false;
}

// How to write what an unknown suffix meant, with the user's own number: " (write 350M)".
std::string suffix_hint(std::string_view number, std::string_view suffix) {
  std::string_view word = suffix;
  while (!word.empty() && word.front() == ' ') word.remove_prefix(1);
  std::string lower(word);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  static const std::vector<std::pair<std::string_view, std::string_view>> kWords = {
      {"thousand", "k"}, {"million", "M"}, {"millions", "M"}, {"mio", "M"}, {"billion", "G"},
      {"billions", "G"}, {"bn", "G"},      {"trillion", "T"}, {"b", "G"},   {"K", "k"}};
  for (const auto& [name, si] : kWords) {
    if (lower == name || word == name) {
      std::string why = si == "G" && lower.size() <= 2 ? "billions are G" : "";
      if (word == "K") why = "thousands are lower-case k";
      return " (write " + std::string(number) + std::string(si) + (why.empty() ? "" : ": " + why) +
             ")";
    }
  }
  if (word.size() < suffix.size() && !word.empty() && is_known_suffix(word))
    return " (no space between the number and its suffix: write " + std::string(number) +
           std::string(word) + ")";
  return "";
}

}  // namespace

std::optional<double> parse_quantity(std::string_view text, std::string* error) {
  auto fail = [&](const std::string& why) -> std::optional<double> {
    if (error) *error = why;
    return std::nullopt;
  };
  if (text.empty()) return fail("must be a quantity such as 340M or 7G, got an empty string");
  std::string_view s = text;
  double sign = 1;
  if (s[0] == '+' || s[0] == '-') {
    if (s[0] == '-') sign = -1;
    s.remove_prefix(1);
  }
  double number = 0;
  size_t used = parse_decimal(s, &number);
  if (used == 0) {
    return fail("must be a quantity such as 340M or 7G, got \"" + std::string(text) + "\"");
  }
  std::string_view suffix = s.substr(used);
  static const std::vector<std::pair<std::string_view, double>> kSuffixes = {
      {"", 1},        {"n", 1e-9},    {"u", 1e-6},    {"m", 1e-3},   {"k", 1e3},     {"M", 1e6},
      {"G", 1e9},     {"T", 1e12},    {"P", 1e15},    {"E", 1e18},   {"Ki", 0x1p10}, {"Mi", 0x1p20},
      {"Gi", 0x1p30}, {"Ti", 0x1p40}, {"Pi", 0x1p50}, {"Ei", 0x1p60}};
  for (const auto& [name, scale] : kSuffixes) {
    if (suffix == name) return sign * number * scale;
  }
  if (suffix.size() >= 2 && (suffix[0] == 'e' || suffix[0] == 'E')) {
    std::string_view exp = suffix.substr(1);
    int exp_sign = 1;
    if (exp[0] == '+' || exp[0] == '-') {
      if (exp[0] == '-') exp_sign = -1;
      exp.remove_prefix(1);
    }
    int e = 0;
    bool ok = !exp.empty() && exp.size() <= 3;
    for (char c : exp) {
      if (c < '0' || c > '9')
        ok = false;
      else
        e = e * 10 + (c - '0');
    }
    if (ok) return sign * number * std::pow(10.0, exp_sign * e);
  }
  const std::string hint = suffix_hint(text.substr(0, text.size() - suffix.size()), suffix);
  return fail("unknown quantity suffix \"" + std::string(suffix) + "\" in \"" + std::string(text) +
              "\"" + hint + "; use k M G T, Ki Mi Gi, or an exponent");
}

std::optional<std::chrono::nanoseconds> parse_duration(std::string_view text, std::string* error) {
  auto fail = [&]() -> std::optional<std::chrono::nanoseconds> {
    if (error) {
      *error = "must be a duration such as 90s, 15m or 1h30m, got \"" + std::string(text) + "\"";
    }
    return std::nullopt;
  };
  std::string_view s = text;
  if (s.empty()) return fail();
  if (s == "0") return std::chrono::nanoseconds(0);
  double total_ns = 0;
  while (!s.empty()) {
    double number = 0;
    size_t used = parse_decimal(s, &number);
    if (used == 0) return fail();
    s.remove_prefix(used);
    static const std::vector<std::pair<std::string_view, double>> kUnits = {
        {"ns", 1},  {"us", 1e3}, {"\xC2\xB5s", 1e3}, {"ms", 1e6},
        {"s", 1e9}, {"m", 60e9}, {"h", 3600e9}};
    bool matched = false;
    // Longest unit first so "ms" is not read as "m" followed by "s".
    for (const auto& [unit, scale] : kUnits) {
      if (unit.size() == 2 || unit.size() == 3) {
        if (s.substr(0, unit.size()) == unit) {
          total_ns += number * scale;
          s.remove_prefix(unit.size());
          matched = true;
          break;
        }
      }
    }
    if (!matched) {
      for (const auto& [unit, scale] : kUnits) {
        if (unit.size() == 1 && !s.empty() && s[0] == unit[0]) {
          total_ns += number * scale;
          s.remove_prefix(1);
          matched = true;
          break;
        }
      }
    }
    if (!matched) return fail();
  }
  if (total_ns > 9.2e18) return fail();
  return std::chrono::nanoseconds(static_cast<int64_t>(std::llround(total_ns)));
}

std::string format_duration(std::chrono::nanoseconds d) {
  using namespace std::chrono;
  auto ns = d.count();
  if (ns == 0) return "0s";
  std::string out;
  if (ns < 0) {
    out = "-";
    ns = -ns;
  }
  if (ns < 1'000'000'000 || (ns % 1'000'000 != 0 && ns < 60'000'000'000)) {
    char buf[32];
    if (ns < 1'000'000)
      std::snprintf(buf, sizeof buf, "%gus", static_cast<double>(ns) / 1e3);
    else if (ns < 1'000'000'000)
      std::snprintf(buf, sizeof buf, "%gms", static_cast<double>(ns) / 1e6);
    else
      std::snprintf(buf, sizeof buf, "%gs", static_cast<double>(ns) / 1e9);
    return out + buf;
  }
  int64_t secs = ns / 1'000'000'000;
  int64_t h = secs / 3600, m = (secs % 3600) / 60, s = secs % 60;
  if (h) out += std::to_string(h) + "h";
  if (m) out += std::to_string(m) + "m";
  if (s) out += std::to_string(s) + "s";
  return out;
}

std::string format_nodes(int64_t count) {
  return std::to_string(count) + (count == 1 ? " node" : " nodes");
}

std::string format_count(double value) {
  static const std::vector<std::pair<double, const char*>> kScales = {
      {1e18, "E"}, {1e15, "P"}, {1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}};
  char buf[32];
  for (const auto& [scale, name] : kScales) {
    if (std::fabs(value) >= scale) {
      std::snprintf(buf, sizeof buf, "%.4g%s", value / scale, name);
      return buf;
    }
  }
  std::snprintf(buf, sizeof buf, "%.4g", value);
  return buf;
}

std::string format_quantity(double value) {
  if (!std::isfinite(value)) return std::to_string(value);
  static const std::vector<std::pair<double, const char*>> kScales = {
      {1e18, "E"}, {1e15, "P"}, {1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}, {1, ""}};
  char buf[48];
  for (const auto& [scale, name] : kScales) {
    if (std::fabs(value) < scale) continue;
    std::snprintf(buf, sizeof buf, "%.15g", value / scale);
    // Only when the digits say the same number (no rounding beyond double's own) without
    // an exponent.
    const double back = std::strtod(buf, nullptr) * scale;
    if (std::string_view(buf).find('e') == std::string_view::npos &&
        std::fabs(back - value) <= 1e-13 * std::fabs(value))
      return std::string(buf) + name;
  }
  std::snprintf(buf, sizeof buf, "%.17g", value);
  return buf;
}

std::string format_percent(double share) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", share * 100);
  return buf;
}

std::string format_gbps(double bytes_per_s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g GB/s", bytes_per_s / 1e9);
  return buf;
}

std::string format_byte_quantity(double bytes) {
  const double whole = std::floor(bytes);
  if (whole != bytes || whole < 0 || whole > 9e18) return std::to_string(bytes);
  auto n = static_cast<unsigned long long>(whole);
  static const char* kSuffixes[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
  int i = 0;
  while (n != 0 && n % 1024 == 0 && i < 6) {
    n /= 1024;
    ++i;
  }
  return std::to_string(n) + kSuffixes[i];
}

std::string format_bytes(double bytes) {
  static const std::vector<std::pair<double, const char*>> kScales = {
      {0x1p40, "TiB"}, {0x1p30, "GiB"}, {0x1p20, "MiB"}, {0x1p10, "KiB"}};
  char buf[32];
  for (const auto& [scale, name] : kScales) {
    if (bytes >= scale) {
      std::snprintf(buf, sizeof buf, "%.4g %s", bytes / scale, name);
      return buf;
    }
  }
  std::snprintf(buf, sizeof buf, "%.0f B", bytes);
  return buf;
}

}  // namespace commgate
