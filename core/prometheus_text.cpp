#include "core/prometheus_text.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace commgate {

std::string prometheus_escape_label(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string prometheus_escape_help(std::string_view help) {
  std::string out;
  for (char c : help) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string prometheus_number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (v == std::floor(v) && std::fabs(v) < 1e15) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.0f", v);
    return buf;
  }
  // As the Prometheus clients print floats (Go's strconv.FormatFloat(v, 'g', -1, 64)):
  // the shortest digits that read back as the same double, in exponent form when the
  // exponent is below -4 or at least 6 ("0.0005", "2.5e-05", "1.5e+06"), never
  // "0.00050000000000000001".
  char buf[64];
  const auto sci = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  const std::string_view s(buf, static_cast<size_t>(sci.ptr - buf));
  const int exponent = std::atoi(std::string(s.substr(s.find('e') + 1)).c_str());
  if (exponent < -4 || exponent >= 6) return std::string(s);
  const auto fixed = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed);
  return std::string(buf, fixed.ptr);
}

void append_prometheus_sample(std::string& out, std::string_view name, std::string_view type,
                              std::string_view help, double value) {
  out += "# HELP ";
  out += name;
  out += ' ';
  out += prometheus_escape_help(help);
  out += "\n# TYPE ";
  out += name;
  out += ' ';
  out += type;
  out += '\n';
  out += name;
  out += ' ';
  out += prometheus_number(value);
  out += '\n';
}

}  // namespace commgate
