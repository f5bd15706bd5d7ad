#include "cli/scaling_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <set>

#include "core/significant_digits.h"

namespace commgate {
namespace {
// Its own namespace: the CLI library is a unity build, and these names are short.
namespace svg {

// The canvas, in px. The plots take the left, the legend the right column; the header
// above and the marker rows and notes below grow the height, never overlap the plots.
constexpr double kWidth = 1040;
constexpr double kPlotLeft = 84;
constexpr double kPlotRight = 716;
constexpr double kLegendX = 744;
constexpr double kStepHeight = 270;  // the step-time panel
constexpr double kSpeedupHeight = 180;
constexpr double kPanelGap = 76;  // the step panel's count labels, the speedup panel's caption
constexpr double kHeaderLine = 18;
constexpr double kNoteLine = 16;
constexpr double kMinComputePx = 4;  // a compute bar thinner than this is drawn this tall

// Colours (Tableau 10: told apart by people with the common colour-vision deficiencies).
constexpr const char* kComputeColour = "#4e79a7";
constexpr const char* kExposedColour = "#f28e2b";
constexpr const char* kOverColour = "#e15759";
// Exposed communication at a count the policy does not judge (beyond maxExtrapolation: the
// decision trusts no prediction there, so neither "within" nor "over" is drawn).
constexpr const char* kUnjudgedColour = "#bab0ac";
constexpr const char* kLimitColour = "#b2182b";
constexpr const char* kAdmittedColour = "#59a14f";
constexpr const char* kIdealColour = "#8c8c8c";
constexpr const char* kSpeedupColour = "#1f3b57";
constexpr const char* kPoolColour = "#7b3294";

std::string num(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

// A coordinate: one decimal is finer than a pixel.
std::string px(double v) {
  return num("%.1f", v);
}

// "78%", "4.2%", "0.31%": as many digits as tell small shares apart.
std::string percent(double share) {
  const double p = share * 100;
  return num(p >= 10 ? "%.0f%%" : p >= 1 ? "%.1f%%" : "%.2f%%", p);
}

std::string milliseconds(double ms) {
  return num(ms >= 100 ? "%.0f ms" : ms >= 10 ? "%.1f ms" : "%.2f ms", ms);
}

std::string nodes_text(int n) {
  return std::to_string(n) + (n == 1 ? " node" : " nodes");
}

// The number of characters (UTF-8 code points) of `text`.
size_t code_points(const std::string& text) {
  size_t n = 0;
  for (unsigned char c : text)
    if ((c & 0xC0) != 0x80) ++n;
  return n;
}

// About how wide `text` draws at `font` px in a sans-serif face (DejaVu Sans is the widest
// common one, at about 0.6 em per character).
double text_width(const std::string& text, double font) {
  return code_points(text) * font * 0.6;
}

// `text` cut to `max_px` at `font` px, with "…" where it was cut: a long job or pool name
// must not run off the canvas.
std::string fitted(const std::string& text, double max_px, double font) {
  const size_t keep = static_cast<size_t>(std::max(1.0, max_px / (font * 0.6))) - 1;
  if (code_points(text) <= keep + 1) return text;
  size_t n = 0, end = 0;
  for (; end < text.size(); ++end) {
    if ((static_cast<unsigned char>(text[end]) & 0xC0) != 0x80 && n++ == keep) break;
  }
  return text.substr(0, end) + "\u2026";
}

// `text` in lines of at most `max_px` at `font` px, broken at spaces; at most `max_lines`,
// the last cut with "…" when there is more.
std::vector<std::string> wrapped(const std::string& text, double max_px, double font,
                                 size_t max_lines) {
  std::vector<std::string> lines;
  std::string line;
  size_t at = 0;
  while (at < text.size()) {
    size_t space = text.find(' ', at);
    if (space == std::string::npos) space = text.size();
    const std::string word = text.substr(at, space - at);
    at = space + 1;
    const std::string longer = line.empty() ? word : line + " " + word;
    if (line.empty() || text_width(longer, font) <= max_px) {
      line = longer;
      continue;
    }
    lines.push_back(line);
    line = word;
  }
  if (!line.empty() || lines.empty()) lines.push_back(line);
  if (lines.size() > max_lines) {
    std::string rest;
    for (size_t i = max_lines - 1; i < lines.size(); ++i)
      rest += (rest.empty() ? "" : " ") + lines[i];
    lines.resize(max_lines - 1);
    lines.push_back(rest);
  }
  for (auto& l : lines) l = fitted(l, max_px, font);  // a word longer than a line
  return lines;
}

std::string text_element(double x, double y, const std::string& content, const std::string& attrs,
                         const std::string& anchor = "start") {
  return "<text x=\"" + px(x) + "\" y=\"" + px(y) + "\"" +
         (anchor == "start" ? "" : " text-anchor=\"" + anchor + "\"") + attrs + ">" +
         xml_escaped(content) + "</text>\n";
}

// A tick step of 1, 2 or 5 times a power of ten giving about `ticks` intervals up to `top`.
double nice_step(double top, int ticks) {
  if (!(top > 0)) return 1;
  const double raw = top / ticks;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  const double norm = raw / magnitude;
  return (norm < 1.5 ? 1 : norm < 3 ? 2 : norm < 7 ? 5 : 10) * magnitude;
}

std::string tick_label(double v, double step) {
  if (step >= 1) return num("%.0f", v);
  const int decimals = static_cast<int>(std::ceil(-std::log10(step) - 1e-9));
  char format[16];
  std::snprintf(format, sizeof format, "%%.%df", decimals);
  return num(format, v);
}

// One panel's vertical scale: 0 to a whole number of tick steps above `max_value`.
struct Scale {
  double top = 1;  // value at the panel's top
  double step = 1;
  double y0 = 0, height = 0;  // the panel, px

  Scale(double max_value, double panel_top, double panel_height, int ticks)
      : y0(panel_top), height(panel_height) {
    if (!std::isfinite(max_value) || max_value <= 0) max_value = 1;  // nothing to scale
    step = nice_step(max_value, ticks);
    top = std::max(step, std::ceil(max_value / step - 1e-9) * step);
  }
  double y(double v) const { return y0 + height - std::clamp(v / top, 0.0, 1.0) * height; }
};

// The horizontal layout. Every count from the first to the last drawn: one slot per
// count, a linear axis. Counts left out (1-16, then powers of two): a log2 axis, each
// count at log2(count), so that the distance between counts stays honest (the trial of
// 2026-12-06: equal slots for 16, 32 and 64 bent a linear speedup into a super-linear
// one). A slot is as wide as the closest two counts are apart.
struct Slots {
  size_t n = 0;
  double width = 0;
  bool log2_axis = false;
  std::vector<double> centres;
  double left(size_t i) const { return centre(i) - width / 2; }
  double centre(size_t i) const { return centres[i]; }
  // Where a count (not necessarily one drawn, fractional allowed) lies on the axis.
  double x_at(double nodes) const {
    if (log2_axis)
      return kPlotLeft + (std::log2(nodes) - lo) / (hi - lo) * (kPlotRight - kPlotLeft);
    return kPlotLeft + (nodes - first + 0.5) * width;
  }
  double lo = 0, hi = 1;  // the log2 axis's ends, in log2(count)
  int first = 1;

  explicit Slots(const std::vector<ScalingPoint>& pts) : n(pts.size()) {
    if (n == 0) return;
    log2_axis = pts.back().nodes - pts.front().nodes + 1 != static_cast<int>(n);
    const double span = kPlotRight - kPlotLeft;
    first = pts.front().nodes;
    if (!log2_axis) {
      width = span / static_cast<double>(n);
      for (size_t i = 0; i < n; ++i) centres.push_back(kPlotLeft + (i + 0.5) * width);
      return;
    }
    // Half an octave of room at each end, for the bars at the first and last counts.
    first = pts.front().nodes;
    lo = std::log2(pts.front().nodes) - 0.5;
    hi = std::log2(pts.back().nodes) + 0.5;
    for (const auto& p : pts)
      centres.push_back(kPlotLeft + (std::log2(p.nodes) - lo) / (hi - lo) * span);
    width = span;
    for (size_t i = 1; i < n; ++i) width = std::min(width, centres[i] - centres[i - 1]);
    width = std::min(width, span / 8);
  }
};

std::string y_axis(const Scale& s, const std::string& title, const std::string& id) {
  std::string out = "<g id=\"" + id + "\" font-size=\"11\" fill=\"#333\">\n";
  for (double v = 0; v <= s.top + s.step / 2; v += s.step) {
    const double y = s.y(v);
    out += "<line x1=\"" + px(kPlotLeft) + "\" x2=\"" + px(kPlotRight) + "\" y1=\"" + px(y) +
           "\" y2=\"" + px(y) + "\" stroke=\"#e3e3e3\" stroke-width=\"1\"/>\n";
    out += text_element(kPlotLeft - 6, y + 4, tick_label(v, s.step), "", "end");
  }
  const double mid = s.y0 + s.height / 2;
  out += "<text x=\"22\" y=\"" + px(mid) + "\" text-anchor=\"middle\" font-size=\"12\" " +
         "transform=\"rotate(-90 22 " + px(mid) + ")\">" + xml_escaped(title) + "</text>\n";
  return out + "</g>\n";
}

// The count labels under a panel: the marked counts always, then 1 and the regular ones
// (multiples of 1, 2, 5, 10, ... on a linear axis; powers of two on a log2 axis), each
// only where it keeps clear of the labels already placed (the trial of 2026-12-06 read
// labels drawn into each other).
std::string x_ticks(const ScalingChart& c, const Slots& slots, double axis_y,
                    const std::set<size_t>& marked) {
  std::string out = "<g font-size=\"11\" fill=\"#333\" text-anchor=\"middle\">\n";
  double widest = 0;
  for (const auto& p : c.points) widest = std::max(widest, text_width(std::to_string(p.nodes), 11));
  const size_t every =
      static_cast<size_t>(std::max(1.0, std::ceil((widest + 8) / std::max(slots.width, 1.0))));
  size_t multiple = 1;
  for (size_t base = 1; !slots.log2_axis && multiple < every; base *= 10)
    for (size_t f : {1, 2, 5})
      if (multiple < every) multiple = base * f;
  auto regular = [&](int nodes) {
    if (nodes == 1) return true;
    if (slots.log2_axis) return (nodes & (nodes - 1)) == 0;
    return static_cast<size_t>(nodes) % multiple == 0;
  };
  std::vector<size_t> candidates(marked.begin(), marked.end());
  for (size_t i = 0; i < slots.n; ++i)
    if (regular(c.points[i].nodes)) candidates.push_back(i);
  std::vector<size_t> shown;
  auto half = [&](size_t i) { return text_width(std::to_string(c.points[i].nodes), 11) / 2; };
  for (size_t i : candidates) {
    const bool clear = std::all_of(shown.begin(), shown.end(), [&](size_t j) {
      return i != j && std::fabs(slots.centre(i) - slots.centre(j)) >= half(i) + half(j) + 6;
    });
    if (clear) shown.push_back(i);
  }
  std::sort(shown.begin(), shown.end());
  for (size_t i = 0; i < slots.n; ++i) {
    const double x = slots.centre(i);
    out += "<line x1=\"" + px(x) + "\" x2=\"" + px(x) + "\" y1=\"" + px(axis_y) + "\" y2=\"" +
           px(axis_y + 4) + "\" stroke=\"#333\"/>\n";
  }
  for (size_t i : shown)
    out += "<text x=\"" + px(slots.centre(i)) + "\" y=\"" + px(axis_y + 16) + "\">" +
           std::to_string(c.points[i].nodes) + "</text>\n";
  out += "<line x1=\"" + px(kPlotLeft) + "\" x2=\"" + px(kPlotRight) + "\" y1=\"" + px(axis_y) +
         "\" y2=\"" + px(axis_y) + "\" stroke=\"#333\"/>\n";
  return out + "</g>\n";
}

std::string decision_text(const ScalingChart& c) {
  std::string s = c.action;
  if (c.action == "Downsize")
    s += " from " + std::to_string(c.requested_nodes) + " to " + nodes_text(c.admitted_nodes);
  else if (c.action == "Admit")
    s += " " + nodes_text(c.admitted_nodes);
  else if (c.action == "Warn")
    s += ": " + nodes_text(c.admitted_nodes) + " admitted over the policy";
  else if (c.action == "Gate")
    s += ": suspended";
  if (!c.reason.empty()) s += " (" + c.reason + ")";
  return s;
}

std::string policy_text(const ScalingChart& c) {
  std::string s = c.policy.empty() ? "policy" : c.policy;
  if (c.max_comm_share) s += ": maxCommShare " + percent(*c.max_comm_share);
  if (c.min_scaling_efficiency) s += ", minScalingEfficiency " + percent(*c.min_scaling_efficiency);
  if (!c.max_comm_share) s += " (limit not known)";
  return s;
}

bool admits(const std::string& action) {
  return action == "Admit" || action == "Downsize" || action == "Warn";
}

// One legend entry: a swatch drawn by `swatch` (at x, y: its top left, 16 x 12) and text.
struct LegendEntry {
  std::string swatch;
  std::string text;
};

std::string legend(const std::vector<LegendEntry>& entries, double y, const std::string& heading) {
  std::string out = text_element(kLegendX, y, heading, " font-size=\"12\" font-weight=\"bold\"");
  y += 10;
  for (const auto& e : entries) {
    out += "<g transform=\"translate(" + px(kLegendX) + " " + px(y) + ")\">" + e.swatch + "</g>\n";
    out += text_element(kLegendX + 24, y + 10, fitted(e.text, kWidth - kLegendX - 30, 11.5),
                        " font-size=\"11.5\"");
    y += 19;
  }
  return out;
}

std::string rect_swatch(const std::string& fill, const std::string& extra = "") {
  return "<rect width=\"16\" height=\"12\" fill=\"" + fill + "\"" + extra + "/>";
}

std::string line_swatch(const std::string& colour, const std::string& dash, double width = 2) {
  return "<line x1=\"0\" x2=\"16\" y1=\"6\" y2=\"6\" stroke=\"" + colour + "\" stroke-width=\"" +
         px(width) + "\"" + (dash.empty() ? "" : " stroke-dasharray=\"" + dash + "\"") + "/>";
}

std::string diamond(double x, double y, double r, bool filled) {
  return "<path d=\"M" + px(x) + " " + px(y - r) + " L" + px(x + r) + " " + px(y) + " L" + px(x) +
         " " + px(y + r) + " L" + px(x - r) + " " + px(y) + " Z\" fill=\"" +
         (filled ? "#222" : "#fff") + "\" stroke=\"#222\" stroke-width=\"1.5\"/>";
}

// The largest step time the step panel shows, in ms: the steps, and the policy's limit
// (compute / (1 - maxCommShare)) so that its line is on the panel.
double step_panel_max_ms(const ScalingChart& c) {
  double max_step = 0;
  for (const auto& p : c.points) {
    max_step = std::max(max_step, p.step_ms);
    if (c.max_comm_share && *c.max_comm_share < 1)
      max_step = std::max(max_step, p.compute_ms / (1 - *c.max_comm_share));
  }
  return max_step;
}

// The note for compute bars drawn taller than they are (kMinComputePx), "" when none is.
std::string enlarged_compute_note(const ScalingChart& c) {
  const double max_step = step_panel_max_ms(c);
  const double unit = max_step >= 10000 ? 1000 : 1;
  const Scale scale(max_step / unit, 0, kStepHeight, 5);
  double thinnest = -1;
  for (const auto& p : c.points)
    if (kStepHeight - scale.y(p.compute_ms / unit) < kMinComputePx)
      thinnest = thinnest < 0 ? p.compute_ms : std::min(thinnest, p.compute_ms);
  if (thinnest < 0) return "";
  return "Compute (blue, " + milliseconds(thinnest) +
         " per step at the least) is too thin to see beside the communication at this scale: "
         "its bars are drawn " +
         num("%.0f", kMinComputePx) + " px tall; each bar's tooltip and -o json have the numbers.";
}

std::string render(const ScalingChart& c) {
  const std::vector<ScalingPoint>& pts = c.points;
  const Slots slots(pts);
  auto index_of = [&](int nodes) -> std::optional<size_t> {
    for (size_t i = 0; i < pts.size(); ++i)
      if (pts[i].nodes == nodes) return i;
    return std::nullopt;
  };
  const bool draws_admitted = admits(c.action) && c.admitted_nodes >= 1;
  const auto requested_at = index_of(c.requested_nodes);
  const auto admitted_at = draws_admitted ? index_of(c.admitted_nodes) : std::nullopt;
  const auto probed_at = c.nodes_probed > 0 ? index_of(c.nodes_probed) : std::nullopt;

  // Top to bottom: the title, the header's lines, the two panels, the count axis's title,
  // one row per marker, the notes. Long lines wrap; nothing overlaps.
  std::vector<std::string> header = wrapped("Link: " + c.link, kWidth - 40, 12.5, 2);
  for (auto& line : wrapped("Pool nodeSelector " + c.node_selector + ". Policy: " + policy_text(c) +
                                ". Decision: " + decision_text(c) + ".",
                            kWidth - 40, 12.5, 3))
    header.push_back(line);
  std::vector<std::string> notes;
  std::vector<std::string> all_notes = c.notes;
  if (const std::string note = enlarged_compute_note(c); !note.empty()) all_notes.push_back(note);
  for (const auto& note : all_notes)
    for (auto& line : wrapped(note, kWidth - 40, 12, 3)) notes.push_back(line);
  const std::string title = "Scaling of " + c.job + " on pool " + c.pool +
                            (c.link_short.empty() ? "" : ", link " + c.link_short);
  const std::vector<std::string> title_lines = wrapped(title, kWidth - 40, 18, 2);
  const double header_top = 30 + 24 * static_cast<double>(title_lines.size() - 1) + 22;
  const double header_bottom = header_top + kHeaderLine * static_cast<double>(header.size() - 1);
  const double step_top = header_bottom + 46;
  const double speedup_top = step_top + kStepHeight + kPanelGap;
  const double axis_bottom = speedup_top + kSpeedupHeight;
  const double marker_top = axis_bottom + 64;
  const double notes_top = (pts.empty() ? header_bottom + 30 : marker_top + 3 * 18 + 10);
  const double height = notes_top + kNoteLine * static_cast<double>(notes.size()) + 8;

  std::string out;
  out += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + px(kWidth) + "\" height=\"" +
         px(height) + "\" viewBox=\"0 0 " + px(kWidth) + " " + px(height) +
         "\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" role=\"img\">\n";
  out += "<title>" + xml_escaped(title) + "</title>\n";
  out += "<desc>" +
         xml_escaped(
             "Predicted step time per node count, split into compute and exposed "
             "communication, and the speedup over one node against the ideal linear "
             "line. " +
             policy_text(c) + ". Decision: " + decision_text(c) + ".") +
         "</desc>\n";
  out +=
      "<defs><pattern id=\"hatch\" width=\"8\" height=\"8\" patternUnits=\"userSpaceOnUse\" "
      "patternTransform=\"rotate(45)\"><rect width=\"8\" height=\"8\" fill=\"#f4f4f4\"/>"
      "<line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"8\" stroke=\"#d0d0d0\" stroke-width=\"3\"/>"
      "</pattern></defs>\n";
  out += "<rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>\n";

  // The header: job, pool and link; the pool's nodeSelector, the policy and the decision.
  out += "<text id=\"chart-title\" x=\"20\" y=\"30\" font-size=\"18\" font-weight=\"bold\">";
  for (size_t i = 0; i < title_lines.size(); ++i)
    out += "<tspan x=\"20\" dy=\"" + std::string(i == 0 ? "0" : "24") + "\">" +
           xml_escaped(title_lines[i]) + "</tspan>";
  out += "</text>\n";
  for (size_t i = 0; i < header.size(); ++i)
    out += text_element(20, header_top + kHeaderLine * static_cast<double>(i), header[i],
                        " font-size=\"12.5\" fill=\"#333\"");
  auto write_notes = [&]() {
    double y = notes_top;
    for (const auto& line : notes) {
      out += text_element(20, y, line, " font-size=\"12\" fill=\"#333\"");
      y += kNoteLine;
    }
  };

  if (pts.empty()) {
    write_notes();
    return out + "</svg>\n";
  }

  // Scales. The step panel reaches the policy's limit too, so that its line is on it.
  double max_speedup = 0;
  for (const auto& p : pts)
    max_speedup = std::max({max_speedup, p.speedup, static_cast<double>(p.nodes)});
  const bool limited = c.max_comm_share && *c.max_comm_share < 1;
  const double max_step = step_panel_max_ms(c);
  const bool seconds = max_step >= 10000;
  const double unit = seconds ? 1000 : 1;  // ms per unit shown
  const Scale step_scale(max_step / unit, step_top, kStepHeight, 5);
  const Scale speedup_scale(max_speedup, speedup_top, kSpeedupHeight, 4);
  auto ys = [&](double ms) { return step_scale.y(ms / unit); };

  out += text_element(kPlotLeft, step_top - 12,
                      "Step time per training step: compute + exposed communication",
                      " font-size=\"13\" font-weight=\"bold\"");
  out += text_element(kPlotLeft, speedup_top - 14, "Speedup over 1 node, against ideal (linear)",
                      " font-size=\"13\" font-weight=\"bold\"");

  // Backgrounds: the counts beyond maxExtrapolation, the admitted and requested columns,
  // in each panel (not across the count labels between them).
  const std::pair<double, double> panels[] = {{step_top, kStepHeight},
                                              {speedup_top, kSpeedupHeight}};
  size_t first_beyond = pts.size();
  for (size_t i = 0; i < pts.size(); ++i)
    if (pts[i].beyond_max_extrapolation) {
      first_beyond = i;
      break;
    }
  if (first_beyond < pts.size()) {
    const double x = slots.left(first_beyond);
    out += "<g id=\"beyond-extrapolation\" data-from-nodes=\"" +
           std::to_string(pts[first_beyond].nodes) + "\">\n";
    for (const auto& [top, h] : panels)
      out += "<rect x=\"" + px(x) + "\" y=\"" + px(top) + "\" width=\"" + px(kPlotRight - x) +
             "\" height=\"" + px(h) + "\" fill=\"url(#hatch)\"/>\n";
    out += "</g>\n";
  }
  for (const auto& [top, h] : panels) {
    if (draws_admitted && admitted_at)
      out += "<rect x=\"" + px(slots.left(*admitted_at)) + "\" y=\"" + px(top) + "\" width=\"" +
             px(slots.width) + "\" height=\"" + px(h) + "\" fill=\"" + kAdmittedColour +
             "\" fill-opacity=\"0.16\"/>\n";
    if (requested_at)
      out += "<rect x=\"" + px(slots.left(*requested_at) + 1) + "\" y=\"" + px(top) +
             "\" width=\"" + px(slots.width - 2) + "\" height=\"" + px(h) +
             "\" fill=\"none\" stroke=\"#555\" stroke-width=\"1.2\" stroke-dasharray=\"5 3\"/>\n";
  }

  out += y_axis(step_scale, seconds ? "step time (s)" : "step time (ms)", "step-axis");
  out += y_axis(speedup_scale, "speedup over 1 node (\u00d7)", "speedup-axis");

  // The stacked bars, one group per count, with the numbers as a tooltip.
  const double bar_width = std::min(slots.width * 0.68, 56.0);
  out += "<g id=\"bars\">\n";
  for (size_t i = 0; i < pts.size(); ++i) {
    const ScalingPoint& p = pts[i];
    const std::string within =
        p.within_policy ? (*p.within_policy ? "true" : "false") : std::string("unknown");
    const double x = slots.centre(i) - bar_width / 2;
    const double y_compute = ys(p.compute_ms);
    const double y_step = ys(p.step_ms);
    out += "<g class=\"bar\" data-nodes=\"" + std::to_string(p.nodes) + "\" data-within-policy=\"" +
           within + "\"" + (p.measured ? " data-measured=\"true\"" : "") + ">";
    out += "<title>" +
           xml_escaped(
               nodes_text(p.nodes) + (p.measured ? " (measured by the probe)" : "") + ": step " +
               milliseconds(p.step_ms) + " = compute " + milliseconds(p.compute_ms) +
               " + exposed communication " + milliseconds(p.exposed_comm_ms) + " (" +
               percent(p.comm_share) + "); speedup " + num("%.2f", p.speedup) +
               "\u00d7, efficiency " + percent(p.efficiency) +
               (p.within_policy ? (*p.within_policy ? "; within the policy" : "; over the policy")
                                : "") +
               (p.beyond_max_extrapolation ? "; beyond maxExtrapolation" : "")) +
           "</title>";
    // Compute stays visible where communication dwarfs it (the trial of 2026-12-06 saw
    // none): at least kMinComputePx tall, the notes say so.
    const double compute_px = std::max(kMinComputePx, step_top + kStepHeight - y_compute);
    out += "<rect class=\"compute\" x=\"" + px(x) + "\" y=\"" +
           px(step_top + kStepHeight - compute_px) + "\" width=\"" + px(bar_width) +
           "\" height=\"" + px(compute_px) + "\" fill=\"" + kComputeColour + "\"/>";
    if (p.exposed_comm_ms > 0)
      out += "<rect x=\"" + px(x) + "\" y=\"" + px(y_step) + "\" width=\"" + px(bar_width) +
             "\" height=\"" + px(std::max(0.0, step_top + kStepHeight - compute_px - y_step)) +
             "\" fill=\"" +
             (p.beyond_max_extrapolation             ? kUnjudgedColour
              : p.within_policy && !*p.within_policy ? kOverColour
                                                     : kExposedColour) +
             "\"/>";
    out += "</g>\n";
    // The share above the bar, where there is room for it.
    if (slots.width >= 30 && p.comm_share > 0)
      out += text_element(slots.centre(i), y_step - 4, percent(p.comm_share),
                          " font-size=\"10\" fill=\"#333\"", "middle");
  }
  out += "</g>\n";

  // The policy's limit on the step panel: the step at which exposed communication is
  // exactly maxCommShare of it, compute / (1 - maxCommShare), count by count.
  if (c.max_comm_share) {
    out += "<g id=\"policy-limit\" data-max-comm-share=\"" + num("%.6g", *c.max_comm_share) + "\">";
    if (limited) {
      std::string d;
      for (size_t i = 0; i < pts.size(); ++i) {
        const double y = ys(pts[i].compute_ms / (1 - *c.max_comm_share));
        d += (i == 0 ? "M" : " L") + px(slots.left(i)) + " " + px(y) + " L" +
             px(slots.left(i) + slots.width) + " " + px(y);
      }
      out += "<path d=\"" + d + "\" fill=\"none\" stroke=\"" + kLimitColour +
             "\" stroke-width=\"2\" stroke-dasharray=\"7 4\"/>";
      const double y = ys(pts[0].compute_ms / (1 - *c.max_comm_share));
      out += "<text x=\"" + px(kPlotLeft + 4) + "\" y=\"" + px(y - 5) +
             "\" font-size=\"11\" fill=\"" + kLimitColour +
             "\" stroke=\"#fff\" stroke-width=\"3\" paint-order=\"stroke\">" +
             xml_escaped(percent(*c.max_comm_share) + " limit") + "</text>";
    }
    out += "</g>\n";
  }

  // The pool's size: no count right of this line can run on the pool as it is now.
  const bool pool_within = c.pool_nodes >= pts.front().nodes && c.pool_nodes < pts.back().nodes;
  if (pool_within) {
    const double x = slots.x_at(c.pool_nodes + 0.5);
    out += "<g id=\"pool-size\" data-nodes=\"" + std::to_string(c.pool_nodes) + "\">";
    for (const auto& [top, h] : panels)
      out += "<line x1=\"" + px(x) + "\" x2=\"" + px(x) + "\" y1=\"" + px(top) + "\" y2=\"" +
             px(top + h) + "\" stroke=\"" + kPoolColour + "\" stroke-width=\"2\"/>";
    const std::string label = "pool: " + nodes_text(c.pool_nodes);
    const bool right = x + 6 + text_width(label, 11) <= kPlotRight;
    out += "<text x=\"" + px(right ? x + 5 : x - 5) + "\" y=\"" + px(step_top + 12) + "\"" +
           (right ? "" : " text-anchor=\"end\"") + " font-size=\"11\" fill=\"" + kPoolColour +
           "\" stroke=\"#fff\" stroke-width=\"3\" paint-order=\"stroke\">" + xml_escaped(label) +
           "</text></g>\n";
  }

  // The speedup panel: ideal, the policy's minimum efficiency, the predicted speedup.
  auto polyline = [&](auto value) {
    std::string points;
    for (size_t i = 0; i < pts.size(); ++i)
      points += (i ? " " : "") + px(slots.centre(i)) + "," + px(speedup_scale.y(value(pts[i])));
    return points;
  };
  out += "<polyline id=\"ideal-line\" points=\"" +
         polyline([](const ScalingPoint& p) { return static_cast<double>(p.nodes); }) +
         "\" fill=\"none\" stroke=\"" + kIdealColour +
         "\" stroke-width=\"1.5\" stroke-dasharray=\"6 4\"/>\n";
  if (c.min_scaling_efficiency) {
    const double e = *c.min_scaling_efficiency;
    out += "<polyline id=\"policy-min-efficiency\" data-min-scaling-efficiency=\"" +
           num("%.6g", e) + "\" points=\"" +
           polyline([e](const ScalingPoint& p) { return e * p.nodes; }) +
           "\" fill=\"none\" stroke=\"" + kLimitColour +
           "\" stroke-width=\"1.5\" stroke-dasharray=\"7 4\"/>\n";
  }
  out += "<g id=\"speedup-line\">\n<polyline points=\"" +
         polyline([](const ScalingPoint& p) { return p.speedup; }) + "\" fill=\"none\" stroke=\"" +
         kSpeedupColour + "\" stroke-width=\"2\"/>\n";
  for (size_t i = 0; i < pts.size(); ++i) {
    const bool over =
        !pts[i].beyond_max_extrapolation && pts[i].within_policy && !*pts[i].within_policy;
    out += "<circle cx=\"" + px(slots.centre(i)) + "\" cy=\"" +
           px(speedup_scale.y(pts[i].speedup)) + "\" r=\"" + (slots.width >= 8 ? "3.5" : "2") +
           "\" fill=\"" + (over ? kOverColour : kSpeedupColour) + "\"/>\n";
  }
  out += "</g>\n";

  // The x axes (counts), under both panels.
  std::set<size_t> marked;
  for (const auto& at : {requested_at, admitted_at, probed_at})
    if (at) marked.insert(*at);
  out += x_ticks(c, slots, step_top + kStepHeight, marked);
  out += x_ticks(c, slots, axis_bottom, marked);
  out += text_element((kPlotLeft + kPlotRight) / 2, axis_bottom + 34,
                      slots.log2_axis ? "nodes (log2 scale: each doubling the same distance; "
                                        "a tick per count drawn)"
                                      : "nodes",
                      " font-size=\"12\"", "middle");

  // The markers, one row each under the axis, so that no two labels overlap: the rightmost
  // count on top, each label right of its triangle, so that no guide (from the axis down to
  // a lower row's triangle, further left) crosses a label above it; markers at no drawn
  // count last.
  struct Marker {
    std::string id;
    int nodes = 0;
    std::optional<size_t> at;
    std::string colour, label, attrs;
  };
  std::vector<Marker> markers;
  markers.push_back({"requested-marker", c.requested_nodes, requested_at, "#444",
                     "requested: " + nodes_text(c.requested_nodes) +
                         (requested_at ? "" : " (not among the counts drawn)"),
                     ""});
  if (draws_admitted) {
    markers.push_back({"admitted-marker", c.admitted_nodes, admitted_at, "#2e7d32",
                       "admitted: " + nodes_text(c.admitted_nodes) + " (" + c.action + ")" +
                           (admitted_at ? "" : ", not among the counts drawn"),
                       ""});
  } else {
    markers.push_back({"admitted-marker", 0, std::nullopt, "#444",
                       "admitted: " + std::string(c.action == "Gate" ? "not yet" : "none") + " (" +
                           c.action + (c.reason.empty() ? "" : ", " + c.reason) + ")",
                       ""});
  }
  const bool probe_measured = probed_at && pts[*probed_at].measured;
  if (c.nodes_probed > 0)
    markers.push_back(
        {"probe-marker", c.nodes_probed, probed_at, "#222",
         "probed at " + nodes_text(c.nodes_probed) +
             (!probed_at       ? " (not among the counts drawn)"
              : probe_measured ? ": the probe measured this step (\u25c6)"
                               : ": the link was measured here; the step is modelled (\u25c7)"),
         std::string(" data-measured=\"") + (probe_measured ? "true" : "false") + "\""});
  std::stable_sort(markers.begin(), markers.end(), [](const Marker& a, const Marker& b) {
    if (a.at.has_value() != b.at.has_value()) return a.at.has_value();
    return a.at && *a.at > *b.at;
  });
  for (size_t row = 0; row < markers.size(); ++row) {
    const Marker& m = markers[row];
    const double row_y = marker_top + 18 * static_cast<double>(row);
    out += "<g id=\"" + m.id + "\" data-nodes=\"" + std::to_string(m.nodes) + "\"" + m.attrs +
           " font-size=\"12\">";
    double x = kPlotLeft;
    if (m.at) {
      x = slots.centre(*m.at);
      out += "<path d=\"M" + px(x) + " " + px(row_y - 11) + " L" + px(x + 5) + " " + px(row_y - 2) +
             " L" + px(x - 5) + " " + px(row_y - 2) + " Z\" fill=\"" + m.colour + "\"/>";
      // A thin guide from the axis's title down to the triangle.
      out += "<line x1=\"" + px(x) + "\" x2=\"" + px(x) + "\" y1=\"" + px(axis_bottom + 40) +
             "\" y2=\"" + px(row_y - 11) + "\" stroke=\"" + m.colour +
             "\" stroke-width=\"0.8\" stroke-dasharray=\"2 2\"/>";
    }
    const std::string text = fitted(m.label, kWidth - 30 - kPlotLeft, 12);
    const bool right = x + 9 + text_width(text, 12) <= kWidth - 10;
    out += "<text x=\"" + px(m.at ? (right ? x + 9 : x - 9) : x) + "\" y=\"" + px(row_y - 2) +
           "\"" + (m.at && !right ? " text-anchor=\"end\"" : "") + " fill=\"" + m.colour + "\">" +
           xml_escaped(text) + "</text></g>\n";
  }
  if (probed_at)
    out += "<g class=\"probe-point\">" +
           diamond(slots.centre(*probed_at), speedup_scale.y(pts[*probed_at].speedup), 6.5,
                   probe_measured) +
           "</g>\n";

  // The legend, right of the plots, one block per panel: what this chart draws.
  const auto drawn = [&](auto pred) { return std::any_of(pts.begin(), pts.end(), pred); };
  const bool any_over = drawn([](const ScalingPoint& p) {
    return !p.beyond_max_extrapolation && p.within_policy && !*p.within_policy;
  });
  const bool any_exposed_within = drawn([](const ScalingPoint& p) {
    return !p.beyond_max_extrapolation && p.exposed_comm_ms > 0 &&
           !(p.within_policy && !*p.within_policy);
  });
  const bool any_unjudged = drawn(
      [](const ScalingPoint& p) { return p.beyond_max_extrapolation && p.exposed_comm_ms > 0; });
  std::vector<LegendEntry> step_entries = {
      {rect_swatch(kComputeColour), "compute (forward, backward, optimizer)"}};
  if (any_exposed_within || !any_over)
    step_entries.push_back(
        {rect_swatch(kExposedColour),
         c.max_comm_share ? "exposed communication, within policy" : "exposed communication"});
  if (any_over)
    step_entries.push_back({rect_swatch(kOverColour), "exposed communication, over policy"});
  if (any_unjudged)
    step_entries.push_back({rect_swatch(kUnjudgedColour), "exposed communication, not judged"});
  if (limited)
    step_entries.push_back({line_swatch(kLimitColour, "7 4"),
                            "policy limit: " + percent(*c.max_comm_share) + " of the step"});
  if (draws_admitted && admitted_at)
    step_entries.push_back(
        {rect_swatch(kAdmittedColour, " fill-opacity=\"0.3\""), "admitted count"});
  if (requested_at)
    step_entries.push_back(
        {rect_swatch("none", " stroke=\"#555\" stroke-dasharray=\"4 2\""), "requested count"});
  if (pool_within)
    step_entries.push_back({line_swatch(kPoolColour, ""),
                            "the pool's " + nodes_text(c.pool_nodes) + ": no more can run"});
  if (first_beyond < pts.size())
    step_entries.push_back({rect_swatch("url(#hatch)", " stroke=\"#bbb\""),
                            "beyond maxExtrapolation" +
                                (c.max_extrapolation > 0 && c.nodes_probed > 0
                                     ? " (" + std::to_string(c.max_extrapolation) + " \u00d7 " +
                                           std::to_string(c.nodes_probed) + " probed)"
                                     : std::string())});
  std::vector<LegendEntry> speedup_entries = {
      {line_swatch(kSpeedupColour, "") + "<circle cx=\"8\" cy=\"6\" r=\"3.5\" fill=\"" +
           kSpeedupColour + "\"/>",
       "speedup (predicted)"},
      {line_swatch(kIdealColour, "6 4", 1.5), "ideal: linear, N nodes = N\u00d7"}};
  if (any_over)
    speedup_entries.push_back(
        {"<circle cx=\"8\" cy=\"6\" r=\"3.5\" fill=\"" + std::string(kOverColour) + "\"/>",
         "speedup at a count over policy"});
  if (c.min_scaling_efficiency)
    speedup_entries.push_back(
        {line_swatch(kLimitColour, "7 4", 1.5),
         "policy minimum: " + percent(*c.min_scaling_efficiency) + " efficiency"});
  if (probed_at)
    speedup_entries.push_back({diamond(8, 6, 5.5, probe_measured),
                               probe_measured ? "the probe's measured step" : "the probe's count"});
  out += "<g id=\"legend\">\n" + legend(step_entries, step_top + 4, "Step time") +
         legend(speedup_entries, speedup_top + 4, "Speedup") + "</g>\n";

  write_notes();
  return out + "</svg>\n";
}

}  // namespace svg
}  // namespace

std::string xml_escaped(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  constexpr const char* kReplacement = "\xEF\xBF\xBD";  // U+FFFD
  for (size_t i = 0; i < text.size();) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      switch (c) {
        case '&':
          out += "&amp;";
          break;
        case '<':
          out += "&lt;";
          break;
        case '>':
          out += "&gt;";
          break;
        case '"':
          out += "&quot;";
          break;
        case '\'':
          out += "&apos;";
          break;
        default:
          // XML 1.0 allows no control characters but tab, newline and carriage return.
          if (c < 0x20 && c != '\t' && c != '\n' && c != '\r')
            out += kReplacement;
          else
            out += static_cast<char>(c);
      }
      ++i;
      continue;
    }
    // A UTF-8 sequence: its length from the lead byte, continuation bytes checked, and
    // overlong forms, surrogates and values past U+10FFFF refused.
    const size_t len = c >= 0xF0 && c <= 0xF4 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 && c <= 0xDF ? 2 : 0;
    bool valid = len > 0 && i + len <= text.size();
    uint32_t cp = len == 2 ? c & 0x1F : len == 3 ? c & 0x0F : c & 0x07;
    for (size_t k = 1; valid && k < len; ++k) {
      const unsigned char cc = static_cast<unsigned char>(text[i + k]);
      valid = (cc & 0xC0) == 0x80;
      cp = (cp << 6) | (cc & 0x3F);
    }
    if (valid)
      valid = (len != 3 ||
               (cp >= 0x800 && (cp < 0xD800 || cp > 0xDFFF) && cp != 0xFFFE && cp != 0xFFFF)) &&
              (len != 4 || (cp >= 0x10000 && cp <= 0x10FFFF));
    if (valid) {
      out.append(text.substr(i, len));
      i += len;
    } else {
      out += kReplacement;
      ++i;
    }
  }
  return out;
}

std::string scaling_chart_svg(const ScalingChart& chart) {
  return svg::render(chart);
}

nlohmann::json scaling_points_json(const std::vector<ScalingPoint>& points) {
  const auto r = [](double v) { return round_significant(v); };
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& p : points) {
    rows.push_back({{"nodes", p.nodes},
                    {"computeMs", r(p.compute_ms)},
                    {"exposedCommMs", r(p.exposed_comm_ms)},
                    {"stepMs", r(p.step_ms)},
                    {"commShare", r(p.comm_share)},
                    {"speedup", r(p.speedup)},
                    {"efficiency", r(p.efficiency)},
                    {"withinPolicy", p.within_policy ? nlohmann::json(*p.within_policy) : nullptr},
                    {"measured", p.measured},
                    {"beyondMaxExtrapolation", p.beyond_max_extrapolation}});
  }
  return rows;
}

}  // namespace commgate
