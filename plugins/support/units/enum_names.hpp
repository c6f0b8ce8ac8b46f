// The names users type for the values of an enumeration (a dtype, a policy, a weight format),
// written once as a table: reading a name and printing a value both come from it, so the two
// directions cannot drift apart.
//
//   constexpr units::EnumName<Color> kColorNames[] = {{Color::Red, "red"}, {Color::Blue, "blue"}};
//   std::optional<Color> c = units::value_named(kColorNames, "red");
//   std::string_view n = units::name_of(kColorNames, Color::Blue);
#pragma once
#include <cstddef>
#include <optional>
#include <string_view>

namespace moepage::units {

template <class E>
struct EnumName {
  E value;
  std::string_view name;
};

// The value spelled `name` (exactly, case included), or nullopt.
template <class E, std::size_t N>
constexpr std::optional<E> value_named(const EnumName<E> (&table)[N], std::string_view name) {
  for (const EnumName<E>& entry : table)
    if (entry.name == name) return entry.value;
  return std::nullopt;
}

// The name of `value`, or `unknown` for a value the table lacks.
template <class E, std::size_t N>
constexpr std::string_view name_of(const EnumName<E> (&table)[N], E value, std::string_view unknown = "?") {
  for (const EnumName<E>& entry : table)
    if (entry.value == value) return entry.name;
  return unknown;
}

}  // namespace moepage::units
