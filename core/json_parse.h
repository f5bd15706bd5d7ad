// Parsing JSON text into nlohmann::json, fast. nlohmann's own parser reads about 100 MB/s
// here: half of the webhook's CPU per AdmissionReview went to it (bench/webhook,
// docs/benchmarks.md). simdjson (Debian libsimdjson-dev) tokenizes at GB/s; the tree is
// then built as nlohmann::json, which every parser in core reads.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string_view>

namespace simdjson::dom {
class element;
}

namespace commgate {

// Same result as nlohmann::json::parse(text): duplicate keys keep the last value, integers
// stay integers (unsigned above INT64_MAX), other numbers are doubles. Text simdjson
// refuses (malformed, or integers beyond 64 bits that nlohmann reads as doubles) goes to
// nlohmann's parser, so errors are its nlohmann::json::parse_error with the byte offset.
nlohmann::json parse_json(std::string_view text);

// A thread's simdjson parser keeps buffers the size of its largest document. One that grew
// past this for a large document is replaced once that document is read (here and in
// webhook/review_parse.cpp), so a few large requests do not hold their memory on every
// thread (issue #19 item 8).
inline constexpr std::size_t kKeptParserBytes = 1024 * 1024;

// The nlohmann tree of a simdjson DOM element, as parse_json builds it (for a reader that
// takes some fields straight from the DOM and a tree of the rest: webhook/review_parse.cpp).
// Recursion is bounded by the parser's maximum depth.
nlohmann::json to_nlohmann(simdjson::dom::element e);

}  // namespace commgate
