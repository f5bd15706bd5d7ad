// Quoting what others wrote (a container's termination message, a probe's error) in a
// message of bounded size.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace commgate {

// The first `n` bytes of `text` followed by "...", not cutting a UTF-8 sequence in two;
// `text` itself when it fits.
inline std::string utf8_prefix(const std::string& text, std::size_t n) {
  if (text.size() <= n) return text;
  std::size_t end = n;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  return text.substr(0, end) + "...";
}

// "a, b, c" of at most `limit` names, "and N more" past it: a list in a message that stays
// short however many there are.
inline std::string listed(const std::vector<std::string>& names, std::size_t limit = 5) {
  std::string out;
  for (std::size_t i = 0; i < names.size() && i < limit; ++i) out += (i ? ", " : "") + names[i];
  if (names.size() > limit) out += " and " + std::to_string(names.size() - limit) + " more";
  return out;
}

}  // namespace commgate
