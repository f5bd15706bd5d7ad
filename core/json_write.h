// Writing JSON text without building an nlohmann::json tree, for the hot paths that answer
// every admission (the AdmissionReview response, the decision record annotation): the
// output is byte for byte what nlohmann's dump() writes for the same values (#9).
#pragma once

#include <string>
#include <string_view>

namespace commgate {

// Appends `s` as a JSON string exactly as nlohmann::json(s).dump() writes it: `"` and `\`
// escaped, \b \f \n \r \t by name, other bytes below 0x20 as \u00xx (lowercase hex), the
// rest as they are. A string with bytes above 0x7f goes through nlohmann itself, which
// checks the UTF-8 and throws nlohmann::json::type_error (316) on invalid bytes, as dump()
// does.
void append_json_string(std::string& out, std::string_view s);

}  // namespace commgate
