#include "sim/wire_times.h"

#include <cstdio>
#include <vector>

namespace commgate::sim {
namespace {

// Reads `n` decimal digits at `pos`; -1 when they are not all digits.
int digits(std::string_view s, std::size_t pos, std::size_t n) {
  if (pos + n > s.size()) return -1;
  int v = 0;
  for (std::size_t i = pos; i < pos + n; ++i) {
    if (s[i] < '0' || s[i] > '9') return -1;
    v = v * 10 + (s[i] - '0');
  }
  return v;
}

struct Field {
  const char* path[2];  // one or two keys; the second nullptr when one
  TimeLayout layout;
};

struct KindTimes {
  const char* storage_key;  // ResourceInfo::storage_key()
  std::vector<Field> fields;
};

const std::vector<KindTimes>& kind_times() {
  static const std::vector<KindTimes> kinds = {
      {"coordination.k8s.io/leases",
       {{{"spec", "acquireTime"}, TimeLayout::kMicroTime},
        {{"spec", "renewTime"}, TimeLayout::kMicroTime}}},
      {"events.k8s.io/events",
       {{{"eventTime", nullptr}, TimeLayout::kMicroTime},
        {{"series", "lastObservedTime"}, TimeLayout::kMicroTime},
        {{"deprecatedFirstTimestamp", nullptr}, TimeLayout::kTime},
        {{"deprecatedLastTimestamp", nullptr}, TimeLayout::kTime}}},
      {"/events",
       {{{"eventTime", nullptr}, TimeLayout::kMicroTime},
        {{"series", "lastObservedTime"}, TimeLayout::kMicroTime},
        {{"firstTimestamp", nullptr}, TimeLayout::kTime},
        {{"lastTimestamp", nullptr}, TimeLayout::kTime}}},
  };
  return kinds;
}

}  // namespace

std::optional<std::string> canonical_time(std::string_view s, TimeLayout layout) {
  // YYYY-MM-DDTHH:MM:SS
  const int year = digits(s, 0, 4), month = digits(s, 5, 2), day = digits(s, 8, 2);
  const int hour = digits(s, 11, 2), minute = digits(s, 14, 2), second = digits(s, 17, 2);
  if (year < 0 || month < 0 || day < 0 || hour < 0 || minute < 0 || second < 0 || s.size() < 19 ||
      s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':')
    return std::nullopt;
  using namespace std::chrono;
  const year_month_day date{std::chrono::year(year), std::chrono::month(month),
                            std::chrono::day(day)};
  if (!date.ok() || hour > 23 || minute > 59 || second > 59) return std::nullopt;
  std::size_t pos = 19;
  long micros = 0;
  std::size_t fraction_digits = 0;
  if (pos < s.size() && s[pos] == '.') {
    ++pos;
    while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') {
      if (fraction_digits < 6) micros = micros * 10 + (s[pos] - '0');
      ++fraction_digits;
      ++pos;
    }
    if (fraction_digits == 0) return std::nullopt;
  }
  if (layout == TimeLayout::kMicroTime && fraction_digits != 6) return std::nullopt;
  for (std::size_t d = fraction_digits; d < 6; ++d) micros *= 10;
  int offset_minutes = 0;
  if (pos < s.size() && s[pos] == 'Z') {
    ++pos;
  } else if (pos < s.size() && (s[pos] == '+' || s[pos] == '-')) {
    const int oh = digits(s, pos + 1, 2), om = digits(s, pos + 4, 2);
    if (oh < 0 || om < 0 || s[pos + 3] != ':' || oh > 23 || om > 59) return std::nullopt;
    offset_minutes = (s[pos] == '-' ? -1 : 1) * (oh * 60 + om);
    pos += 6;
  } else {
    return std::nullopt;
  }
  if (pos != s.size()) return std::nullopt;

  const sys_time<microseconds> t = sys_days(date) + hours(hour) + minutes(minute) +
                                   seconds(second) + microseconds(micros) - minutes(offset_minutes);
  const sys_days day_utc = floor<days>(t);
  const year_month_day ymd(day_utc);
  const hh_mm_ss<microseconds> tod(t - day_utc);
  char out[40];
  if (layout == TimeLayout::kTime) {
    std::snprintf(out, sizeof out, "%04d-%02u-%02uT%02ld:%02ld:%02ldZ", int(ymd.year()),
                  unsigned(ymd.month()), unsigned(ymd.day()), long(tod.hours().count()),
                  long(tod.minutes().count()), long(tod.seconds().count()));
  } else {
    std::snprintf(out, sizeof out, "%04d-%02u-%02uT%02ld:%02ld:%02ld.%06ldZ", int(ymd.year()),
                  unsigned(ymd.month()), unsigned(ymd.day()), long(tod.hours().count()),
                  long(tod.minutes().count()), long(tod.seconds().count()),
                  long(tod.subseconds().count()));
  }
  return std::string(out);
}

void canonicalize_times(const ResourceInfo& r, nlohmann::json& object) {
  if (r.custom || !object.is_object()) return;
  const std::string key = r.storage_key();
  for (const auto& kind : kind_times()) {
    if (key != kind.storage_key) continue;
    for (const auto& field : kind.fields) {
      nlohmann::json* value = &object;
      for (const char* part : field.path) {
        if (part == nullptr) break;
        if (!value->is_object() || !value->contains(part)) {
          value = nullptr;
          break;
        }
        value = &(*value)[part];
      }
      if (value == nullptr || !value->is_string()) continue;
      if (auto canonical = canonical_time(value->get<std::string>(), field.layout))
        *value = *canonical;
    }
  }
}

}  // namespace commgate::sim
