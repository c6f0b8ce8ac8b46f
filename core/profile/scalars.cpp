#include "profile/scalars.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <string>

namespace moepage::profile {
namespace {

template <typename T>
std::optional<T> parse_whole(std::string_view text) {
  // from_chars refuses a leading '+'; accept it since people write "+4".
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  if (text.empty()) return std::nullopt;
  T value{};
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

}  // namespace

std::optional<int64_t> parse_int(std::string_view text) { return parse_whole<int64_t>(text); }

std::optional<uint64_t> parse_uint(std::string_view text) {
  if (!text.empty() && text.front() == '-') return std::nullopt;
  return parse_whole<uint64_t>(text);
}

std::optional<double> parse_float(std::string_view text) {
  auto value = parse_whole<double>(text);
  if (!value || !std::isfinite(*value)) return std::nullopt;
  return value;
}

std::optional<bool> parse_bool(std::string_view text) {
  std::string lower(text);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (lower == "true" || lower == "yes" || lower == "on") return true;
  if (lower == "false" || lower == "no" || lower == "off") return false;
  return std::nullopt;
}

}  // namespace moepage::profile
