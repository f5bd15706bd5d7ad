#include "core/object_reader.h"

#include <algorithm>
#include <cmath>

#include "core/quantity.h"

namespace commgate {

std::string describe_json(const Json& value) {
  switch (value.type()) {
    case Json::value_t::null:
      return "null";
    case Json::value_t::boolean:
      return value.get<bool>() ? "boolean true" : "boolean false";
    case Json::value_t::string: {
      std::string s = value.get<std::string>();
      if (s.size() > 40) s.replace(37, std::string::npos, "...");
      return "string \"" + s + "\"";
    }
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
    case Json::value_t::number_float: {
      // A YAML .inf or .nan (core/yaml_json.cpp keeps them): dump() would write null.
      const double d = value.get<double>();
      if (std::isnan(d)) return ".nan";
      if (std::isinf(d)) return d > 0 ? ".inf" : "-.inf";
      return "number " + value.dump();
    }
    case Json::value_t::array:
      return "a list";
    case Json::value_t::object:
      return "an object";
    default:
      return "an unsupported value";
  }
}

namespace {
// Without building a path per value: the webhook parses every template (#9).
bool has_non_finite(const Json& value) {
  if (value.is_number_float()) return !std::isfinite(value.get<double>());
  if (!value.is_structured()) return false;
  for (const Json& child : value)
    if (has_non_finite(child)) return true;
  return false;
}
}  // namespace

void reject_non_finite(const Json& value, const std::string& path, FieldErrors& errors) {
  if (!has_non_finite(value)) return;
  if (value.is_number_float()) {
    errors.add(path, "must be a finite number, got " + describe_json(value));
  } else if (value.is_object()) {
    for (auto it = value.begin(); it != value.end(); ++it)
      reject_non_finite(it.value(), join_path(path, it.key()), errors);
  } else if (value.is_array()) {
    for (size_t i = 0; i < value.size(); ++i)
      reject_non_finite(value[i], index_path(path, i), errors);
  }
}

std::string closest_match(const std::string& word, const std::set<std::string>& candidates) {
  auto distance = [](const std::string& a, const std::string& b) {
    std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
      cur[0] = i;
      for (size_t j = 1; j <= b.size(); ++j) {
        size_t sub = prev[j - 1] + (std::tolower(a[i - 1]) == std::tolower(b[j - 1]) ? 0 : 1);
        cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
      }
      std::swap(prev, cur);
    }
    return prev[b.size()];
  };
  std::string best;
  size_t best_distance = 3;
  for (const auto& c : candidates) {
    size_t d = distance(word, c);
    if (d < best_distance) {
      best_distance = d;
      best = c;
    }
  }
  return best;
}

std::string did_you_mean(const std::string& word, const std::set<std::string>& candidates) {
  const std::string hint = closest_match(word, candidates);
  return hint.empty() ? std::string() : " (did you mean \"" + hint + "\"?)";
}

ObjectReader::ObjectReader(const Json* object, std::string path, FieldErrors& errors)
    : object_(object), path_(std::move(path)), errors_(&errors) {
  if (object_ && !object_->is_object()) {
    errors_->add(path_, "must be an object, got " + describe_json(*object_));
    object_ = nullptr;
  }
}

const Json* ObjectReader::find(const std::string& key, Presence presence) {
  known_.push_back(key);
  if (object_) {
    auto it = object_->find(key);
    if (it != object_->end() && !it->is_null()) return &*it;
  }
  // A missing parent is reported once, by whoever required it.
  if (presence == Presence::kRequired && object_)
    errors_->add(path_of(key), "required field is missing");
  return nullptr;
}

void ObjectReader::type_error(const std::string& key, const char* want, const Json& got) {
  errors_->add(path_of(key), std::string("must be ") + want + ", got " + describe_json(got));
}

void ObjectReader::not_finite_error(const std::string& key, const Json& got) {
  errors_->add(path_of(key), "must be a finite number, got " + describe_json(got));
}

const Json* ObjectReader::raw(const std::string& key, Presence presence) {
  return find(key, presence);
}

std::optional<int64_t> ObjectReader::integer(const std::string& key, Presence presence,
                                             std::optional<int64_t> min,
                                             std::optional<int64_t> max) {
  const Json* v = find(key, presence);
  if (!v) return std::nullopt;
  int64_t value = 0;
  if (v->is_number_integer()) {
    value = v->get<int64_t>();
    if (v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
      errors_->add(path_of(key), "is too large, got " + v->dump());
      return std::nullopt;
    }
  } else if (v->is_number_float()) {
    double d = v->get<double>();
    if (!std::isfinite(d)) {
      not_finite_error(key, *v);
      return std::nullopt;
    }
    if (d != std::floor(d) || std::fabs(d) > 9e15) {
      type_error(key, "an integer", *v);
      return std::nullopt;
    }
    value = static_cast<int64_t>(d);
  } else {
    type_error(key, "an integer", *v);
    return std::nullopt;
  }
  if (min && value < *min) {
    errors_->add(path_of(key),
                 "must be >= " + std::to_string(*min) + ", got " + std::to_string(value));
    return std::nullopt;
  }
  if (max && value > *max) {
    errors_->add(path_of(key),
                 "must be <= " + std::to_string(*max) + ", got " + std::to_string(value));
    return std::nullopt;
  }
  return value;
}

namespace {
std::string format_number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}
}  // namespace

std::optional<double> ObjectReader::number(const std::string& key, Presence presence,
                                           std::optional<double> min, std::optional<double> max) {
  const Json* v = find(key, presence);
  if (!v) return std::nullopt;
  if (!v->is_number()) {
    type_error(key, "a number", *v);
    return std::nullopt;
  }
  double value = v->get<double>();
  if (!std::isfinite(value)) {
    not_finite_error(key, *v);
    return std::nullopt;
  }
  if (min && value < *min) {
    errors_->add(path_of(key),
                 "must be >= " + format_number(*min) + ", got " + format_number(value));
    return std::nullopt;
  }
  if (max && value > *max) {
    errors_->add(path_of(key),
                 "must be <= " + format_number(*max) + ", got " + format_number(value));
    return std::nullopt;
  }
  return value;
}

std::optional<bool> ObjectReader::boolean(const std::string& key, Presence presence) {
  const Json* v = find(key, presence);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) {
    type_error(key, "true or false", *v);
    return std::nullopt;
  }
  return v->get<bool>();
}

std::optional<std::string> ObjectReader::string(const std::string& key, Presence presence,
                                                bool allow_empty) {
  const Json* v = find(key, presence);
  if (!v) return std::nullopt;
  if (!v->is_string()) {
    type_error(key, "a string", *v);
    return std::nullopt;
  }
  std::string s = v->get<std::string>();
  if (s.empty() && !allow_empty) {
    errors_->add(path_of(key), "must not be empty");
    return std::nullopt;
  }
  return s;
}

std::optional<std::string> ObjectReader::one_of(const std::string& key, Presence presence,
                                                std::span<const char* const> allowed) {
  bool empty_allowed = false;
  for (const char* a : allowed) empty_allowed = empty_allowed || *a == '\0';
  auto s = string(key, presence, empty_allowed);
  if (!s) return std::nullopt;
  std::string list;
  std::set<std::string> names;
  for (const char* a : allowed) {
    if (*s == a) return s;
    if (!list.empty()) list += ", ";
    list += *a == '\0' ? "\"\"" : a;
    if (*a != '\0') names.insert(a);
  }
  errors_->add(path_of(key),
               "must be one of " + list + ", got \"" + *s + "\"" + did_you_mean(*s, names));
  return std::nullopt;
}

std::optional<double> ObjectReader::positive(const std::string& key, Presence presence) {
  auto value = number(key, presence);
  if (value && *value <= 0) {
    errors_->add(path_of(key), "must be > 0, got " + format_number(*value));
    return std::nullopt;
  }
  return value;
}

std::optional<TimePoint> ObjectReader::time(const std::string& key, Presence presence) {
  const Json* v = find(key, presence);
  if (!v) return std::nullopt;
  if (!v->is_string()) {
    type_error(key, "an RFC 3339 time string such as \"2026-11-30T17:30:00Z\"", *v);
    return std::nullopt;
  }
  auto t = parse_rfc3339(v->get<std::string>());
  if (!t) {
    errors_->add(path_of(key),
                 "must be an RFC 3339 time such as 2026-11-30T17:30:00Z, got " + describe_json(*v));
  }
  return t;
}

std::optional<double> ObjectReader::quantity(const std::string& key, Presence presence,
                                             std::optional<double> min) {
  const Json* v = find(key, presence);
  if (!v) return std::nullopt;
  std::optional<double> value;
  if (v->is_number()) {
    value = v->get<double>();
    if (!std::isfinite(*value)) {
      not_finite_error(key, *v);
      return std::nullopt;
    }
  } else if (v->is_string()) {
    std::string why;
    value = parse_quantity(v->get<std::string>(), &why);
    if (!value) {
      errors_->add(path_of(key), why);
      return std::nullopt;
    }
  }
  if (!value) {
    type_error(key, "a quantity such as 340M or a number", *v);
    return std::nullopt;
  }
  if (min && *value < *min) {
    // In the notation the field is written in: "-350M", not "-3.5e+08"; a string as the
    // user wrote it ("5m", not 0.0050000000000000001).
    const std::string written = v->is_string() ? v->get<std::string>() : "";
    std::string message = "must be >= " + format_quantity(*min) + ", got " +
                          (written.empty() ? format_quantity(*value) : written);
    // "5m" is 5 milli in Kubernetes quantities; whoever wrote it meant 5 million.
    if (written.size() > 1 && written.back() == 'm' && *value * 1e9 >= *min) {
      const std::string digits = written.substr(0, written.size() - 1);
      message += " (m is milli, a thousandth: for " + digits + " million write " + digits + "M)";
    }
    errors_->add(path_of(key), message);
    return std::nullopt;
  }
  return value;
}

std::optional<std::chrono::nanoseconds> ObjectReader::duration(const std::string& key,
                                                               Presence presence) {
  const Json* v = find(key, presence);
  if (!v) return std::nullopt;
  if (!v->is_string()) {
    type_error(key, "a duration string such as \"24h\"", *v);
    return std::nullopt;
  }
  std::string why;
  auto d = parse_duration(v->get<std::string>(), &why);
  if (!d) errors_->add(path_of(key), why);
  return d;
}

std::optional<std::map<std::string, std::string>> ObjectReader::string_map(const std::string& key,
                                                                           Presence presence) {
  const Json* v = find(key, presence);
  if (!v) return std::nullopt;
  if (!v->is_object()) {
    type_error(key, "a map of strings", *v);
    return std::nullopt;
  }
  std::map<std::string, std::string> out;
  bool ok = true;
  for (auto it = v->begin(); it != v->end(); ++it) {
    if (!it.value().is_string()) {
      errors_->add(join_path(path_of(key), it.key()),
                   "must be a string, got " + describe_json(it.value()) +
                       " (quote values such as \"true\" or \"1\" in YAML)");
      ok = false;
      continue;
    }
    out[it.key()] = it.value().get<std::string>();
  }
  if (!ok) return std::nullopt;
  return out;
}

std::optional<std::vector<std::string>> ObjectReader::string_list(const std::string& key,
                                                                  Presence presence) {
  const Json* v = find(key, presence);
  if (!v) return std::nullopt;
  if (!v->is_array()) {
    type_error(key, "a list of strings", *v);
    return std::nullopt;
  }
  std::vector<std::string> out;
  bool ok = true;
  for (size_t i = 0; i < v->size(); ++i) {
    const Json& item = (*v)[i];
    if (!item.is_string()) {
      errors_->add(index_path(path_of(key), i), "must be a string, got " + describe_json(item));
      ok = false;
      continue;
    }
    out.push_back(item.get<std::string>());
  }
  if (!ok) return std::nullopt;
  return out;
}

ObjectReader ObjectReader::object(const std::string& key, Presence presence) {
  return ObjectReader(find(key, presence), path_of(key), *errors_);
}

std::vector<ObjectReader> ObjectReader::object_list(const std::string& key, Presence presence) {
  std::vector<ObjectReader> out;
  const Json* v = find(key, presence);
  if (!v) return out;
  if (!v->is_array()) {
    type_error(key, "a list", *v);
    return out;
  }
  for (size_t i = 0; i < v->size(); ++i) {
    out.emplace_back(&(*v)[i], index_path(path_of(key), i), *errors_);
  }
  return out;
}

void ObjectReader::allow(std::initializer_list<const char*> keys) {
  for (const char* k : keys) known_.emplace_back(k);
}

void ObjectReader::reject_unknown_fields() {
  if (!object_) return;
  for (auto it = object_->begin(); it != object_->end(); ++it) {
    if (std::find(known_.begin(), known_.end(), it.key()) != known_.end()) continue;
    errors_->add(path_of(it.key()),
                 "unknown field" +
                     did_you_mean(it.key(), std::set<std::string>(known_.begin(), known_.end())));
  }
}

}  // namespace commgate
