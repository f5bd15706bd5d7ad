#include "core/snapshot.h"

namespace commgate {

const CommProfile* Snapshot::profile(const std::string& name) const {
  auto it = profiles.find(name);
  return it == profiles.end() ? nullptr : &it->second;
}

const std::map<std::string, std::string>& Snapshot::labels_of(const std::string& ns) const {
  static const std::map<std::string, std::string> kNone;
  auto it = namespace_labels.find(ns);
  return it == namespace_labels.end() ? kNone : it->second;
}

}  // namespace commgate
