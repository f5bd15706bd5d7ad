#include "core/json_write.h"

#include <nlohmann/json.hpp>

namespace commgate {

void append_json_string(std::string& out, std::string_view s) {
  for (unsigned char c : s) {
    if (c >= 0x80) {
      out += nlohmann::json(std::string(s)).dump();
      return;
    }
  }
  out += '"';
  size_t run = 0;  // start of the bytes not yet copied: copied in runs, not one by one
  for (size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    out.append(s.data() + run, i - run);
    run = i + 1;
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default: {
        static constexpr char kHex[] = "0123456789abcdef";
        const char escaped[] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 0xf]};
        out.append(escaped, sizeof escaped);
      }
    }
  }
  out.append(s.data() + run, s.size() - run);
  out += '"';
}

}  // namespace commgate
