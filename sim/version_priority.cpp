#include "sim/version_priority.h"

#include <algorithm>
#include <optional>

namespace commgate::sim {

namespace {

struct KubeVersion {
  int stability = 0;  // alpha 0, beta 1, GA 2 (helpers.go's versionType)
  long major = 0;
  long minor = 0;
};

// Digits only, at most 9 of them (helpers.go's strconv.Atoi would accept more; no served
// version has them).
std::optional<long> digits_of(const std::string& s) {
  if (s.empty() || s.size() > 9) return std::nullopt;
  if (!std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  return std::stol(s);
}

// ^v(\d+)(?:(alpha|beta)(\d+))?$
std::optional<KubeVersion> parse_kube_version(const std::string& v) {
  if (v.size() < 2 || v[0] != 'v') return std::nullopt;
  const std::size_t end_of_major = v.find_first_not_of("0123456789", 1);
  const auto major = digits_of(v.substr(1, end_of_major - 1));
  if (!major) return std::nullopt;
  if (end_of_major == std::string::npos) return KubeVersion{2, *major, 0};
  const std::string rest = v.substr(end_of_major);
  for (const auto& [word, stability] : {std::pair{"alpha", 0}, std::pair{"beta", 1}}) {
    const std::string prefix = word;
    if (rest.rfind(prefix, 0) != 0) continue;
    const auto minor = digits_of(rest.substr(prefix.size()));
    if (!minor) return std::nullopt;
    return KubeVersion{stability, *major, *minor};
  }
  return std::nullopt;
}

}  // namespace

bool preferred_before(const std::string& a, const std::string& b) {
  if (a == b) return false;
  const auto ka = parse_kube_version(a);
  const auto kb = parse_kube_version(b);
  if (!ka && !kb) return a < b;
  if (!ka || !kb) return ka.has_value();
  if (ka->stability != kb->stability) return ka->stability > kb->stability;
  if (ka->major != kb->major) return ka->major > kb->major;
  return ka->minor > kb->minor;
}

void sort_by_version_priority(std::vector<std::string>& versions) {
  std::stable_sort(versions.begin(), versions.end(), preferred_before);
}

}  // namespace commgate::sim
