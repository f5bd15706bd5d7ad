// What every `commgate` subcommand does with the files and flags a user gives it: one
// usage-error type (exit 2), files read with a message that says what is wrong with them
// (a directory, a binary file), and text from the user quoted printably.
#pragma once

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace commgate {

// A mistake in the command line or its files: the subcommand prints it and exits 2.
class UsageError : public std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The text of a file named on the command line. Throws UsageError naming the path when it
// cannot be read, is a directory, or holds a NUL byte (a binary file is not a manifest;
// its bytes are never echoed).
std::string read_text_file(const std::string& path);

// Writes `text` to `path` whole or not at all: into a new file beside it, then renamed over
// it, so that a reader never sees half a file and a failure leaves an existing file as it
// was. Throws UsageError naming the path and why (a directory, no such folder, no
// permission, a full disk).
void write_text_file(const std::string& path, const std::string& text);

// Every manifest document of a YAML or JSON file (core/yaml_json.h). Throws UsageError
// with the path in front of the parser's message.
std::vector<nlohmann::json> read_manifests(const std::string& path);

// `kind` of a manifest, "" when it has none.
std::string kind_of(const nlohmann::json& document);

// `text` with control characters escaped (\t, \x00; newlines kept), for messages
// that quote what a user wrote.
std::string printable(std::string_view text);

}  // namespace commgate
