// The Prometheus text format (0.0.4): escaping and number formatting, in core so that
// every library that exposes metrics (server/'s registry, kube/'s informers and work
// queue, the operator) writes them the same way without linking the HTTPS server.
#pragma once

#include <string>
#include <string_view>

namespace commgate {

// A label value with backslash, double quote and newline escaped.
std::string prometheus_escape_label(std::string_view value);
// HELP text with backslash and newline escaped.
std::string prometheus_escape_help(std::string_view help);
// As the Prometheus clients print a sample value: integers without a fraction, others in
// the shortest form that reads back as the same double; NaN, +Inf, -Inf.
std::string prometheus_number(double v);
// One sample with its HELP and TYPE lines.
void append_prometheus_sample(std::string& out, std::string_view name, std::string_view type,
                              std::string_view help, double value);

}  // namespace commgate
