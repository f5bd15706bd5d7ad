// One table per enum: the names a parser accepts and the names a serializer prints come
// from the same array, so they cannot drift apart (tests/crds/ holds the CRDs' enums to
// the same tables).
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string_view>

namespace commgate {

template <class E>
struct EnumName {
  E value;
  const char* name;
};

// The name of `value` in `table`; "?" for a value the table lacks (a bug: assert in tests).
template <class E, size_t N>
constexpr const char* name_of(const std::array<EnumName<E>, N>& table, E value) {
  for (const auto& entry : table) {
    if (entry.value == value) return entry.name;
  }
  return "?";
}

// The value named `name` (case-sensitive, as Kubernetes enums are).
template <class E, size_t N>
constexpr std::optional<E> value_of(const std::array<EnumName<E>, N>& table,
                                    std::string_view name) {
  for (const auto& entry : table) {
    if (name == entry.name) return entry.value;
  }
  return std::nullopt;
}

}  // namespace commgate
