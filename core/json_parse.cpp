#include "core/json_parse.h"

#include <simdjson.h>

namespace commgate {
namespace {

using nlohmann::json;

// Recursion is bounded by the parser's maximum depth (simdjson's default, 1024).
json to_nlohmann(simdjson::dom::element e) {
  switch (e.type()) {
    case simdjson::dom::element_type::OBJECT: {
      json out = json::object();
      auto& fields = out.get_ref<json::object_t&>();
      for (auto field : simdjson::dom::object(e)) {
        fields.insert_or_assign(std::string(field.key), to_nlohmann(field.value));
      }
      return out;
    }
    case simdjson::dom::element_type::ARRAY: {
      json out = json::array();
      auto& items = out.get_ref<json::array_t&>();
      for (auto item : simdjson::dom::array(e)) items.push_back(to_nlohmann(item));
      return out;
    }
    case simdjson::dom::element_type::STRING:
      return std::string(std::string_view(e));
    case simdjson::dom::element_type::INT64:
      return int64_t(e);
    case simdjson::dom::element_type::UINT64:
      return uint64_t(e);
    case simdjson::dom::element_type::DOUBLE:
      return double(e);
    case simdjson::dom::element_type::BOOL:
      return bool(e);
    case simdjson::dom::element_type::NULL_VALUE:
      return nullptr;
  }
  return nullptr;
}

}  // namespace

json parse_json(std::string_view text) {
  // One parser per thread: it keeps its buffers between documents.
  thread_local simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (parser.parse(text.data(), text.size()).get(root) == simdjson::SUCCESS) {
    return to_nlohmann(root);
  }
  return json::parse(text);
}

}  // namespace commgate
