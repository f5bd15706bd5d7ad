#include "core/field_errors.h"

#include <cctype>

namespace commgate {

std::string FieldErrors::to_string() const {
  std::string out;
  for (const auto& e : errors_) {
    if (!out.empty()) out += '\n';
    out += e.to_string();
  }
  return out;
}

void FieldErrors::throw_if_any(const std::string& what) const {
  if (!empty()) throw ValidationError(what, *this);
}

ValidationError::ValidationError(const std::string& what, FieldErrors errors)
    : std::runtime_error(what + ":\n" + errors.to_string()), errors_(std::move(errors)) {}

std::string join_path(const std::string& parent, const std::string& key) {
  if (parent.empty()) return key;
  // Keys that are not plain identifiers (label keys such as "kubernetes.io/hostname")
  // are quoted in brackets, as kubectl explain and the apiserver print them.
  for (char c : key) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-')) {
      return parent + "[\"" + key + "\"]";
    }
  }
  return parent + "." + key;
}

std::string index_path(const std::string& parent, size_t index) {
  return parent + "[" + std::to_string(index) + "]";
}

}  // namespace commgate
