#include "cli/flag_reader.h"

#include <sstream>

namespace commgate {

bool FlagReader::is(std::string_view flag) {
  const std::string& a = current();
  const bool match = a == flag || (a.size() > flag.size() && a.compare(0, flag.size(), flag) == 0 &&
                                   a[flag.size()] == '=');
  if (match) flag_ = std::string(flag);
  return match;
}

std::string FlagReader::value() {
  const std::string& a = current();
  if (a.size() > flag_.size()) return a.substr(flag_.size() + 1);
  if (i_ + 1 >= args_.size()) throw UsageError(flag_ + " needs a value");
  return args_[++i_];
}

std::string FlagReader::nonempty_value() {
  std::string v = value();
  if (v.empty()) throw UsageError(flag_ + " must not be empty");
  return v;
}

int FlagReader::int_value(int min, int max) {
  const std::string v = value();
  size_t used = 0;
  long n = 0;
  try {
    n = std::stol(v, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (v.empty() || used != v.size() || n < min || n > max)
    throw bad("an integer from " + std::to_string(min) + " to " + std::to_string(max), v);
  return static_cast<int>(n);
}

double FlagReader::double_value(double min) {
  const std::string v = value();
  size_t used = 0;
  double d = 0;
  try {
    d = std::stod(v, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (v.empty() || used != v.size() || !(d >= min)) {
    std::ostringstream text;
    text << "a number >= " << min;
    throw bad(text.str(), v);
  }
  return d;
}

bool FlagReader::bool_value() {
  const std::string& a = current();
  if (a.size() == flag_.size()) return true;
  const std::string v = a.substr(flag_.size() + 1);
  if (v == "true") return true;
  if (v == "false") return false;
  throw bad("true or false", v);
}

std::chrono::seconds FlagReader::seconds_value(std::chrono::seconds min) {
  const std::string v = value();
  std::string digits = v;
  long unit = 1;
  if (!digits.empty() && digits.back() == 's') {
    digits.pop_back();
  } else if (!digits.empty() && digits.back() == 'm') {
    digits.pop_back();
    unit = 60;
  }
  size_t used = 0;
  long n = -1;
  try {
    n = std::stol(digits, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (digits.empty() || used != digits.size() || n < 0 || n * unit < min.count())
    throw bad("whole seconds of at least " + std::to_string(min.count()) + "s (\"15s\", \"2m\")",
              v);
  return std::chrono::seconds(n * unit);
}

UsageError FlagReader::unknown() const {
  return UsageError("unknown argument \"" + printable(current()) + "\"");
}

UsageError FlagReader::bad(const std::string& expected, const std::string& got) const {
  return UsageError(flag_ + " must be " + expected + ", got \"" + printable(got) + "\"");
}

}  // namespace commgate
