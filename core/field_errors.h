// Field-path errors: every parser in commgate reports what is wrong by naming the
// field, as Kubernetes does ("spec.numNodes: must be >= 1, got 0").
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace commgate {

struct FieldError {
  std::string path;     // e.g. "spec.model.parameters", "spec.tolerations[1].key"
  std::string message;  // e.g. "must be >= 1, got 0"

  std::string to_string() const { return path.empty() ? message : path + ": " + message; }
  bool operator==(const FieldError&) const = default;
};

// Collects every error of one document, so a user fixes them all in one round trip.
class FieldErrors {
 public:
  void add(std::string path, std::string message) {
    errors_.push_back({std::move(path), std::move(message)});
  }
  bool empty() const { return errors_.empty(); }
  size_t size() const { return errors_.size(); }
  const std::vector<FieldError>& all() const { return errors_; }
  // One error per line.
  std::string to_string() const;
  // Throws ValidationError when any error was collected.
  void throw_if_any(const std::string& what) const;

 private:
  std::vector<FieldError> errors_;
};

// Thrown by the parse_* functions; what() is a multi-line message naming each field.
class ValidationError : public std::runtime_error {
 public:
  ValidationError(const std::string& what, FieldErrors errors);
  const FieldErrors& errors() const { return errors_; }

 private:
  FieldErrors errors_;
};

// Joins a parent path and a child key: join_path("spec", "numNodes") == "spec.numNodes".
std::string join_path(const std::string& parent, const std::string& key);
std::string index_path(const std::string& parent, size_t index);

}  // namespace commgate
