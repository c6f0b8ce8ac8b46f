// Strict readers for the scalar texts a profile holds. Each returns nullopt unless the whole
// text is the value (no trailing garbage, no silent truncation), so callers can name the key
// and say what was expected.
#pragma once
#include <cstdint>
#include <optional>
#include <string_view>

namespace moepage::profile {

std::optional<int64_t> parse_int(std::string_view text);
std::optional<uint64_t> parse_uint(std::string_view text);
// Decimal or exponent notation; refuses nan and inf.
std::optional<double> parse_float(std::string_view text);
// true/false, yes/no, on/off (any letter case), as YAML writers produce them.
std::optional<bool> parse_bool(std::string_view text);

}  // namespace moepage::profile
