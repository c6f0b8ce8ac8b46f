#include "units/byte_size.hpp"

#include <array>
#include <cstdio>
#include <utility>

namespace moepage::units {
namespace {

constexpr uint64_t kKi = 1024ull;
constexpr uint64_t kK = 1000ull;

// The whole suffix must match one entry exactly, so the order does not matter.
constexpr std::array<std::pair<std::string_view, uint64_t>, 9> kUnits{{
    {"B", 1},
    {"KiB", kKi},
    {"MiB", kKi* kKi},
    {"GiB", kKi* kKi* kKi},
    {"TiB", kKi* kKi* kKi* kKi},
    {"KB", kK},
    {"MB", kK* kK},
    {"GB", kK* kK* kK},
    {"TB", kK* kK* kK* kK},
}};

bool is_digit(char c) { return c >= '0' && c <= '9'; }

}  // namespace

std::optional<uint64_t> parse_size(std::string_view text) {
  // Integer and fractional digits are kept as exact integers so "1.5GB" is exactly 1500000000
  // and no floating-point rounding sneaks into byte budgets.
  size_t i = 0;
  unsigned __int128 whole = 0;
  size_t whole_digits = 0;
  while (i < text.size() && is_digit(text[i])) {
    whole = whole * 10 + unsigned(text[i] - '0');
    if (whole > UINT64_MAX) return std::nullopt;
    ++whole_digits;
    ++i;
  }
  unsigned __int128 frac = 0;
  unsigned __int128 frac_scale = 1;
  size_t frac_digits = 0;
  if (i < text.size() && text[i] == '.') {
    ++i;
    while (i < text.size() && is_digit(text[i])) {
      // Digits past 18 cannot change a byte count of any realistic size; ignore them rather
      // than overflow the scale.
      if (frac_digits < 18) {
        frac = frac * 10 + unsigned(text[i] - '0');
        frac_scale *= 10;
      }
      ++frac_digits;
      ++i;
    }
    if (frac_digits == 0) return std::nullopt;  // "1." is not a number
  }
  if (whole_digits == 0) return std::nullopt;  // also refuses "-1", ".5", "", "auto"

  const bool spaced = i < text.size() && text[i] == ' ';
  if (spaced) ++i;
  std::string_view unit_text = text.substr(i);
  uint64_t unit = 0;
  if (unit_text.empty()) {
    if (spaced) return std::nullopt;  // "4096 " names no unit after its space
    unit = 1;
  } else {
    for (const auto& [name, factor] : kUnits) {
      if (unit_text == name) unit = factor;
    }
    if (unit == 0) return std::nullopt;
  }

  unsigned __int128 bytes = whole * unit + frac * unit / frac_scale;
  if (bytes > UINT64_MAX) return std::nullopt;
  return static_cast<uint64_t>(bytes);
}

std::string format_bytes(uint64_t bytes) {
  static constexpr const char* kNames[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  constexpr unsigned kLast = sizeof kNames / sizeof kNames[0] - 1;
  if (bytes < 1024) return std::to_string(bytes) + " B";
  // Work in hundredths of the unit, rounded to nearest, so the printed digits are exact.
  unsigned unit = 0;
  long double value = (long double)bytes;
  while (value >= 1024.0L && unit < kLast) {
    value /= 1024.0L;
    ++unit;
  }
  uint64_t hundredths = uint64_t(value * 100.0L + 0.5L);
  if (hundredths >= 102400 && unit < kLast) {  // 1023.999 rounds up into the next unit
    hundredths = 100;
    ++unit;
  }
  char buf[48];
  const auto whole = (unsigned long long)(hundredths / 100);
  if (hundredths % 10 == 0)
    std::snprintf(buf, sizeof buf, "%llu.%llu %s", whole, (unsigned long long)(hundredths % 100 / 10), kNames[unit]);
  else std::snprintf(buf, sizeof buf, "%llu.%02llu %s", whole, (unsigned long long)(hundredths % 100), kNames[unit]);
  return buf;
}

std::string group_digits(uint64_t n) {
  const std::string digits = std::to_string(n);
  std::string out;
  out.reserve(digits.size() + digits.size() / 3);
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::optional<uint64_t> checked_mul(uint64_t a, uint64_t b) {
  uint64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

}  // namespace moepage::units
