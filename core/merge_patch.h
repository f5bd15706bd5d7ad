// The JSON merge patch (RFC 7386) that turns one object into another: what a status
// writer sends when a nested object must end up exactly as given, since a merge patch
// keeps every field it does not name (a field dropped from a copied spec would otherwise
// stay in the stored copy).
#pragma once

#include <nlohmann/json.hpp>

namespace commgate {

// Applying the result to `before` (nlohmann::json::merge_patch) gives `after`: fields of
// `before` that `after` lacks are null, objects on both sides are patched field by field,
// anything else is `after`'s value. A null inside `after` cannot be expressed (a merge
// patch reads it as "remove"); it is removed.
nlohmann::json merge_patch_from(const nlohmann::json& before, const nlohmann::json& after);

}  // namespace commgate
