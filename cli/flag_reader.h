// Command-line flags as kubectl and Go's flag package take them: "--flag value" and
// "--flag=value", booleans as "--flag" or "--flag=true|false". Each error names the flag
// and the value it got, for the subcommand to print with its usage and exit 2.
// Used by `commgate operator`; the older subcommands have hand-written loops.
//
//   FlagReader flags(args);
//   for (; !flags.done(); flags.next()) {
//     if (flags.is("--port")) o.port = flags.int_value(0, 65535);
//     else if (flags.is("--leader-elect")) o.leader_elect = flags.bool_value();
//     else throw flags.unknown();
//   }
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "cli/command_input.h"  // UsageError

namespace commgate {

class FlagReader {
 public:
  explicit FlagReader(const std::vector<std::string>& args) : args_(args) {}

  bool done() const { return i_ >= args_.size(); }
  void next() { ++i_; }
  const std::string& current() const { return args_[i_]; }

  // The current argument is `flag`, or `flag=...`. Remembers the flag for the value
  // readers' messages.
  bool is(std::string_view flag);

  // The flag's value: after '=' or the next argument (consumed). "--x needs a value"
  // when there is none.
  std::string value();
  // The same, not empty.
  std::string nonempty_value();
  // An integer in [min, max]: "--port must be an integer from 0 to 65535, got \"x\"".
  int int_value(int min, int max);
  // A number >= min.
  double double_value(double min);
  // "--flag" alone is true; "--flag=true|false" (no separate argument, as Go's flags).
  bool bool_value();
  // Whole seconds: "15s", "2m", or a bare number of seconds; at least `min`.
  std::chrono::seconds seconds_value(std::chrono::seconds min);

  // "unknown argument \"x\"".
  UsageError unknown() const;

 private:
  UsageError bad(const std::string& expected, const std::string& got) const;

  const std::vector<std::string>& args_;
  size_t i_ = 0;
  std::string flag_;  // the flag `is` last matched
};

}  // namespace commgate
