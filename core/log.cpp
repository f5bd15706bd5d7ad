#include "core/log.h"

#include <cstdio>
#include <ctime>
#include <iostream>
#include <mutex>
#include <nlohmann/json.hpp>

namespace commgate {
namespace {

// A value that text output must quote: empty, or holding a space, '=', '"' or a control
// character (so that `key=value` pairs split unambiguously).
bool needs_quotes(std::string_view value) {
  if (value.empty()) return true;
  for (const char c : value)
    if (c == ' ' || c == '=' || c == '"' || static_cast<unsigned char>(c) < 0x20) return true;
  return false;
}

std::string quote_text(std::string_view value) {
  std::string out = "\"";
  for (const char c : value) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        out += c;
    }
  }
  return out + "\"";
}

// "2026-12-01T21:40:00.123Z": milliseconds, UTC.
std::string format_time_ms(TimePoint time) {
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(time.time_since_epoch()).count();
  const std::time_t seconds = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<int>(ms % 1000));
  return buf;
}

// One writer at a time per sink; a line is written whole and flushed.
LogSink locked_sink(std::ostream& out, std::function<std::string(const LogRecord&)> format) {
  auto mu = std::make_shared<std::mutex>();
  return [&out, mu, format = std::move(format)](const LogRecord& record) {
    const std::string line = format(record) + "\n";
    std::lock_guard lock(*mu);
    out << line << std::flush;
  };
}

}  // namespace

const char* to_string(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return "debug";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kWarning:
      return "warning";
    case LogLevel::kError:
      return "error";
  }
  return "unknown";
}

std::optional<LogLevel> parse_log_level(std::string_view text) {
  for (const LogLevel level :
       {LogLevel::kDebug, LogLevel::kInfo, LogLevel::kWarning, LogLevel::kError})
    if (text == to_string(level)) return level;
  return std::nullopt;
}

std::string to_string(const LogField::Value& value) {
  if (const auto* s = std::get_if<std::string>(&value)) return *s;
  if (const auto* b = std::get_if<bool>(&value)) return *b ? "true" : "false";
  if (const auto* i = std::get_if<int64_t>(&value)) return std::to_string(*i);
  return nlohmann::json(std::get<double>(value)).dump();
}

// One sink for every default Logger, so their lines never interleave.
Logger::Logger() {
  static const auto sink = std::make_shared<const LogSink>(text_log_sink(std::cerr, "commgate"));
  sink_ = sink;
}

Logger::Logger(LogSink sink, LogLevel min_level)
    : sink_(sink ? std::make_shared<const LogSink>(std::move(sink)) : nullptr),
      min_level_(min_level) {}

Logger Logger::discard() {
  return Logger(LogSink{});
}

Logger Logger::with(LogFields context) const {
  Logger out = *this;
  out.context_.insert(out.context_.end(), std::make_move_iterator(context.begin()),
                      std::make_move_iterator(context.end()));
  return out;
}

void Logger::log(LogLevel level, std::string_view message, LogFields fields) const {
  if (!enabled(level)) return;
  try {
    if (!context_.empty()) fields.insert(fields.begin(), context_.begin(), context_.end());
    (*sink_)(LogRecord{level, message, fields});
  } catch (...) {
  }
}

std::string format_log_text(const LogRecord& record, std::string_view prefix) {
  std::string line(prefix);
  if (!line.empty()) line += ": ";
  line += to_string(record.level);
  line += ": ";
  line += record.message;
  for (const LogField& f : record.fields) {
    const std::string value = to_string(f.value);
    line += ' ';
    line += f.key;
    line += '=';
    line += std::holds_alternative<std::string>(f.value) && needs_quotes(value) ? quote_text(value)
                                                                                : value;
  }
  return line;
}

std::string format_log_json(const LogRecord& record, TimePoint time) {
  nlohmann::ordered_json out;
  out["time"] = format_time_ms(time);
  out["level"] = to_string(record.level);
  out["msg"] = record.message;
  for (const LogField& f : record.fields) {
    // A field never replaces the record's own keys.
    const std::string key =
        f.key == "time" || f.key == "level" || f.key == "msg" ? "field." + f.key : f.key;
    std::visit([&](const auto& v) { out[key] = v; }, f.value);
  }
  // Invalid UTF-8 (a file name, a server's message) is replaced, never thrown on.
  return out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

LogSink text_log_sink(std::ostream& out, std::string prefix) {
  return locked_sink(out, [prefix = std::move(prefix)](const LogRecord& record) {
    return format_log_text(record, prefix);
  });
}

LogSink json_log_sink(std::ostream& out, std::function<TimePoint()> clock) {
  if (!clock) clock = [] { return std::chrono::system_clock::now(); };
  return locked_sink(out, [clock = std::move(clock)](const LogRecord& record) {
    return format_log_json(record, clock());
  });
}

}  // namespace commgate
