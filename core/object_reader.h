// Reads one JSON object field by field, checking types and ranges and recording
// field-path errors instead of throwing, so one pass reports every mistake. Keys the
// reader was never asked about are reported as unknown (with a "did you mean").
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "core/enum_table.h"
#include "core/field_errors.h"
#include "core/time_format.h"

namespace commgate {

using Json = nlohmann::json;

enum class Presence { kOptional, kRequired };

class ObjectReader {
 public:
  // `object` may be nullptr (the field was absent): reads then return nullopt. Any value
  // that is not an object is reported at `path`, a JSON null included: a null list item
  // or document is a mistake, not an absence (fields set to null are absent, as
  // Kubernetes reads them, because object() passes nullptr for them).
  ObjectReader(const Json* object, std::string path, FieldErrors& errors);

  bool present() const { return object_ != nullptr; }
  const std::string& path() const { return path_; }
  std::string path_of(const std::string& key) const { return join_path(path_, key); }
  FieldErrors& errors() const { return *errors_; }

  // Returns the raw value of `key` (null when absent) and marks the key known.
  const Json* raw(const std::string& key, Presence presence = Presence::kOptional);

  std::optional<int64_t> integer(const std::string& key, Presence presence,
                                 std::optional<int64_t> min = std::nullopt,
                                 std::optional<int64_t> max = std::nullopt);
  std::optional<double> number(const std::string& key, Presence presence,
                               std::optional<double> min = std::nullopt,
                               std::optional<double> max = std::nullopt);
  std::optional<bool> boolean(const std::string& key, Presence presence);
  std::optional<std::string> string(const std::string& key, Presence presence,
                                    bool allow_empty = false);
  // One of `allowed` (case-sensitive, as Kubernetes enums are); a near miss gets a
  // "did you mean". An empty name in `allowed` admits the empty string.
  std::optional<std::string> one_of(const std::string& key, Presence presence,
                                    std::span<const char* const> allowed);
  std::optional<std::string> one_of(const std::string& key, Presence presence,
                                    std::initializer_list<const char*> allowed) {
    return one_of(key, presence, std::span<const char* const>(allowed.begin(), allowed.size()));
  }
  // A member of an enum's table (core/enum_table.h), by name.
  template <class E, size_t N>
  std::optional<E> enumeration(const std::string& key, Presence presence,
                               const std::array<EnumName<E>, N>& table) {
    std::array<const char*, N> names{};
    for (size_t i = 0; i < N; ++i) names[i] = table[i].name;
    auto name = one_of(key, presence, names);
    if (!name) return std::nullopt;
    return value_of(table, *name);
  }
  // A number > 0 (bandwidths, step times: zero is not a measurement).
  std::optional<double> positive(const std::string& key, Presence presence);
  // An RFC 3339 time, as metav1.Time ("2026-11-30T17:30:00Z"): the one reader of times.
  std::optional<TimePoint> time(const std::string& key, Presence presence);
  // A Kubernetes quantity string or a JSON number ("340M", 340000000).
  std::optional<double> quantity(const std::string& key, Presence presence,
                                 std::optional<double> min = std::nullopt);
  // A Go duration string ("24h").
  std::optional<std::chrono::nanoseconds> duration(const std::string& key, Presence presence);
  // map[string]string, such as labels and nodeSelector.
  std::optional<std::map<std::string, std::string>> string_map(const std::string& key,
                                                               Presence presence);
  std::optional<std::vector<std::string>> string_list(const std::string& key, Presence presence);
  // A nested object; absent → a reader with present() == false.
  ObjectReader object(const std::string& key, Presence presence = Presence::kOptional);
  // A list of objects, one reader per element.
  std::vector<ObjectReader> object_list(const std::string& key,
                                        Presence presence = Presence::kOptional);

  // Marks keys as known without reading them (fields kept verbatim or owned by others).
  void allow(std::initializer_list<const char*> keys);
  // Reports every key neither read nor allowed. Call once, after all reads.
  void reject_unknown_fields();

 private:
  const Json* find(const std::string& key, Presence presence);
  void type_error(const std::string& key, const char* want, const Json& got);
  // A YAML .inf, -.inf or .nan where a number belongs.
  void not_finite_error(const std::string& key, const Json& got);

  const Json* object_;
  std::string path_;
  FieldErrors* errors_;
  // Keys read or allowed, in reading order (duplicates possible). A vector, not a set:
  // the set allocated a node per key read, a tenth of parsing a TrainingJob (#9).
  std::vector<std::string> known_;
};

// A short description of a JSON value for error messages: "string \"abc\"", "number 2.5";
// a non-finite number (YAML's .inf, -.inf, .nan) as its YAML spelling.
std::string describe_json(const Json& value);

// Reports every non-finite number (a YAML .inf, -.inf or .nan) anywhere in `value`, at its
// path: for parts kept verbatim and never read field by field (a pod template), which
// JSON cannot carry (they would reach Kubernetes as null).
void reject_non_finite(const Json& value, const std::string& path, FieldErrors& errors);

// The closest candidate by edit distance (<= 2 edits), or "" when none is close.
std::string closest_match(const std::string& word, const std::set<std::string>& candidates);

// The closest candidate as a message's tail, ` (did you mean "tiny"?)`, or "" when none
// is close: the one wording every parser and check uses.
std::string did_you_mean(const std::string& word, const std::set<std::string>& candidates);

}  // namespace commgate
