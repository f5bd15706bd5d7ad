#include "operator/pod_failure.h"

#include <cctype>
#include <climits>
#include <cstdint>
#include <string_view>
#include <vector>

#include "core/json_access.h"
#include "core/text_cut.h"
#include "operator/object_fields.h"

namespace commgate::op {
namespace {

using nlohmann::json;

// Without a terminal's colour sequences (ESC [ ... final byte), other control characters
// (carriage returns) and surrounding blanks.
std::string printable(std::string_view line) {
  std::string out;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (c == '\x1b' && i + 1 < line.size() && line[i + 1] == '[') {
      i += 2;
      while (i < line.size() && (line[i] < 0x40 || line[i] > 0x7e)) ++i;
      continue;
    }
    if (static_cast<unsigned char>(c) >= 0x20 && c != 0x7f) out += c;
  }
  const size_t first = out.find_first_not_of(' ');
  if (first == std::string::npos) return "";
  return out.substr(first, out.find_last_not_of(' ') - first + 1);
}

// `line` without torchrun's per-rank prefix ("[rank0]: ", "[default0]:").
std::string_view without_rank_prefix(std::string_view line) {
  if (line.empty() || line[0] != '[') return line;
  const size_t close = line.find("]:");
  if (close == std::string_view::npos || close > 24) return line;
  line.remove_prefix(close + 2);
  while (!line.empty() && line[0] == ' ') line.remove_prefix(1);
  return line;
}

// "RuntimeError: ...", "torch.distributed.DistBackendError: ...", "KeyboardInterrupt":
// Python's last line of a traceback, which starts at the line's first column.
bool is_exception_line(std::string_view line) {
  size_t i = 0;
  while (i < line.size() &&
         (std::isalnum(static_cast<unsigned char>(line[i])) || line[i] == '_' || line[i] == '.'))
    ++i;
  if (i == 0 || !std::isalpha(static_cast<unsigned char>(line[0]))) return false;
  if (i < line.size() && line[i] != ':') return false;
  const std::string_view name = line.substr(0, i);
  if (name.ends_with("ChildFailedError")) return false;
  for (std::string_view kind : {"Error", "Exception", "Exit", "Interrupt"})
    if (name.ends_with(kind)) return true;
  return false;
}

bool has_alnum(std::string_view line) {
  for (char c : line)
    if (std::isalnum(static_cast<unsigned char>(c))) return true;
  return false;
}

// The value of a "  rank      : 0 (local_rank: 0)" line of torchrun's report.
std::string report_value(const std::string& line, std::string_view key) {
  if (line.rfind(key, 0) != 0) return "";
  const size_t colon = line.find(':', key.size());
  if (colon == std::string::npos || line.find_first_not_of(' ', key.size()) != colon) return "";
  return printable(std::string_view(line).substr(colon + 1));
}

// When the log's tail holds only torchrun's report (the child's own lines were longer
// than the termination message keeps): "train.py FAILED (rank 0 (local_rank: 0),
// exitcode 2 (pid: 75)); the rank's own error is earlier in the pod's log".
std::string torchrun_summary(const std::vector<std::string>& lines, size_t from) {
  std::string failed, rank, exitcode;
  for (size_t i = from; i < lines.size(); ++i) {
    const std::string& line = lines[i];
    if (failed.empty() && line.ends_with(" FAILED")) failed = line;
    if (rank.empty()) rank = report_value(line, "rank");
    if (exitcode.empty()) exitcode = report_value(line, "exitcode");
  }
  if (failed.empty()) return "";
  std::string details;
  if (!rank.empty()) details = "rank " + rank;
  if (!exitcode.empty())
    details += (details.empty() ? "" : ", ") + std::string("exitcode ") + exitcode;
  return failed + (details.empty() ? "" : " (" + details + ")") +
         "; the rank's own error is earlier in the pod's log";
}

const json* failed_container(const json& pod) {
  const json& statuses = json_at(pod, {"status", "containerStatuses"});
  if (!statuses.is_array()) return nullptr;
  for (const json& s : statuses) {
    const json& code = json_at(s, {"state", "terminated", "exitCode"});
    if (code.is_number_integer() && code.get<int64_t>() != 0) return &s;
  }
  return nullptr;
}

}  // namespace

std::string failure_line(const std::string& log_tail, size_t max_bytes) {
  std::vector<std::string> lines;
  for (size_t start = 0; start <= log_tail.size();) {
    size_t end = log_tail.find('\n', start);
    if (end == std::string::npos) end = log_tail.size();
    lines.push_back(
        printable(without_rank_prefix(std::string_view(log_tail).substr(start, end - start))));
    start = end + 1;
  }
  // torchrun's own report of a failed child starts here: what the child said is before.
  size_t report = lines.size();
  for (size_t i = 0; i < lines.size() && report == lines.size(); ++i)
    if (lines[i].rfind("ERROR:torch.distributed.elastic", 0) == 0 ||
        lines[i].find("ChildFailedError") != std::string::npos)
      report = i;
  for (size_t i = report; i-- > 0;)
    if (is_exception_line(lines[i])) return utf8_prefix(lines[i], max_bytes);
  if (report < lines.size()) {
    // The child's last words (python's "can't open file"), else torchrun's summary.
    for (size_t i = report; i-- > 0;)
      if (has_alnum(lines[i])) return utf8_prefix(lines[i], max_bytes);
    if (std::string summary = torchrun_summary(lines, report); !summary.empty())
      return utf8_prefix(summary, max_bytes);
  }
  for (size_t i = lines.size(); i-- > 0;)
    if (has_alnum(lines[i])) return utf8_prefix(lines[i], max_bytes);
  return "";
}

std::string first_pod_failure(const std::vector<json>& pods) {
  const json* first = nullptr;
  const json* first_container = nullptr;
  auto earlier = [](const json& a, const json& ca, const json& b, const json& cb) {
    const std::string fa = json_string(ca, {"state", "terminated", "finishedAt"});
    const std::string fb = json_string(cb, {"state", "terminated", "finishedAt"});
    if (fa != fb) return !fa.empty() && (fb.empty() || fa < fb);
    const int ia = detail::completion_index(a), ib = detail::completion_index(b);
    if (ia != ib) return ia < ib;
    return json_string(a, {"metadata", "name"}) < json_string(b, {"metadata", "name"});
  };
  for (const json& pod : pods) {
    const json* c = failed_container(pod);
    if (c && (!first || earlier(pod, *c, *first, *first_container))) {
      first = &pod;
      first_container = c;
    }
  }
  if (!first) return "";
  const int index = detail::completion_index(*first);
  const json& terminated = json_at(*first_container, {"state", "terminated"});
  std::string out = "pod " + json_string(*first, {"metadata", "name"}) +
                    (index != INT_MAX ? " (node rank " + std::to_string(index) + ")" : "") +
                    " exited with code " +
                    std::to_string(json_at(terminated, {"exitCode"}).get<int64_t>());
  if (const std::string why = failure_line(json_string(terminated, {"message"})); !why.empty())
    out += ": " + why;
  return out;
}

}  // namespace commgate::op
