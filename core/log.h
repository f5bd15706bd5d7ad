// One logging interface for every library here (server/, kube/, webhook/, the operator):
// a level, a message and key-value fields, handed to one sink that the binary chooses.
// Libraries take a Logger in their Options and never print on their own (STYLE.md: no
// printf in library code); a default-constructed Logger writes a line to stderr, so a
// library used without wiring still says what went wrong.
//
//   log.info("policy files loaded", {{"policies", 3}, {"names", "strict,lenient"}});
//   auto watch_log = log.with({{"collection", path}});  // context on every record
//
// Sinks: text_log_sink ("<prefix>: <level>: <message> key=value ...", the form the
// binaries have always written) and json_log_sink (one JSON object per line, for log
// collectors). A sink is called from any thread and must not throw; both here serialize
// their writes, so lines never interleave.
#pragma once

#include <concepts>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/time_format.h"

namespace commgate {

enum class LogLevel { kDebug, kInfo, kWarning, kError };
const char* to_string(LogLevel level);  // "debug", "info", "warning", "error"
std::optional<LogLevel> parse_log_level(std::string_view text);

// One key-value pair. Numbers and booleans stay numbers and booleans in JSON.
struct LogField {
  using Value = std::variant<std::string, int64_t, double, bool>;

  LogField(std::string k, std::string v) : key(std::move(k)), value(std::move(v)) {}
  LogField(std::string k, std::string_view v) : key(std::move(k)), value(std::string(v)) {}
  LogField(std::string k, const char* v) : key(std::move(k)), value(std::string(v)) {}
  LogField(std::string k, bool v) : key(std::move(k)), value(v) {}
  LogField(std::string k, double v) : key(std::move(k)), value(v) {}
  template <std::integral T>
  requires(!std::same_as<T, bool>) LogField(std::string k, T v)
      : key(std::move(k)), value(static_cast<int64_t>(v)) {}

  std::string key;
  Value value;
};
using LogFields = std::vector<LogField>;

// The value as text: strings as they are, numbers as JSON writes them.
std::string to_string(const LogField::Value& value);

struct LogRecord {
  LogLevel level = LogLevel::kInfo;
  std::string_view message;
  const LogFields& fields;  // the logger's context fields first, then the call's
};

// Called on the logging thread; must be thread-safe and must not throw.
using LogSink = std::function<void(const LogRecord&)>;

class Logger {
 public:
  // Text lines on stderr, "commgate: <level>: ...", info and above.
  Logger();
  explicit Logger(LogSink sink, LogLevel min_level = LogLevel::kInfo);
  // Drops every record (tests that do not look at logs).
  static Logger discard();

  // A logger writing to the same sink with `context` added to every record.
  Logger with(LogFields context) const;

  bool enabled(LogLevel level) const { return sink_ && level >= min_level_; }
  // Never throws: a sink that throws loses its record, not the caller's work.
  void log(LogLevel level, std::string_view message, LogFields fields = {}) const;
  void debug(std::string_view message, LogFields fields = {}) const {
    log(LogLevel::kDebug, message, std::move(fields));
  }
  void info(std::string_view message, LogFields fields = {}) const {
    log(LogLevel::kInfo, message, std::move(fields));
  }
  void warning(std::string_view message, LogFields fields = {}) const {
    log(LogLevel::kWarning, message, std::move(fields));
  }
  void error(std::string_view message, LogFields fields = {}) const {
    log(LogLevel::kError, message, std::move(fields));
  }

 private:
  std::shared_ptr<const LogSink> sink_;  // null: discard
  LogLevel min_level_ = LogLevel::kInfo;
  LogFields context_;
};

// "<prefix>: <level>: <message> key=value key="two words"" — one line per record (a
// message with newlines keeps them: multi-line field-path errors stay readable).
LogSink text_log_sink(std::ostream& out, std::string prefix);
// {"time":"2026-12-01T21:40:00.123Z","level":"info","msg":"...","key":"value",...}: one
// object per line, keys in the order given. `clock` defaults to the system clock.
LogSink json_log_sink(std::ostream& out, std::function<TimePoint()> clock = {});

// The formatting the sinks use, for tests and for sinks of other kinds.
std::string format_log_text(const LogRecord& record, std::string_view prefix);
std::string format_log_json(const LogRecord& record, TimePoint time);

}  // namespace commgate
