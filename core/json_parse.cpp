#include "core/json_parse.h"

#include <simdjson.h>

namespace commgate {

using nlohmann::json;

json to_nlohmann(simdjson::dom::element e) {
  switch (e.type()) {
    case simdjson::dom::element_type::OBJECT: {
      json out = json::object();
      auto& fields = out.get_ref<json::object_t&>();
      for (auto field : simdjson::dom::object(e)) {
        // Kubernetes writes most keys in order; a hint at the end makes those inserts O(1).
        auto it = fields.emplace_hint(fields.end(), std::string(field.key), nullptr);
        it->second = to_nlohmann(field.value);  // a duplicate: the last value wins
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

json parse_json(std::string_view text) {
  // One parser per thread: it keeps its buffers between documents.
  thread_local simdjson::dom::parser parser;
  struct Shrink {
    ~Shrink() {
      if (parser.capacity() > kKeptParserBytes) parser = simdjson::dom::parser();
    }
  } shrink;
  simdjson::dom::element root;
  if (parser.parse(text.data(), text.size()).get(root) == simdjson::SUCCESS) {
    return to_nlohmann(root);
  }
  return json::parse(text);
}

}  // namespace commgate
