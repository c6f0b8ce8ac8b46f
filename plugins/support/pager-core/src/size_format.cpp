#include "moepage/pager_core/size_format.hpp"

#include <cstdio>

namespace moepage::pager {

std::string format_bytes(uint64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bytes < 1024) return std::to_string(bytes) + " B";
  // Work in hundredths of the unit, rounded to nearest, so the printed digits are exact.
  unsigned unit = 0;
  long double value = (long double)bytes;
  while (value >= 1024.0L && unit + 1 < sizeof kUnits / sizeof kUnits[0]) {
    value /= 1024.0L;
    ++unit;
  }
  uint64_t hundredths = uint64_t(value * 100.0L + 0.5L);
  if (hundredths >= 102400 && unit + 1 < sizeof kUnits / sizeof kUnits[0]) {  // 1023.999 rounds up
    hundredths = 100;
    ++unit;
  }
  char buf[48];
  if (hundredths % 10 == 0)
    std::snprintf(buf, sizeof buf, "%llu.%llu %s", (unsigned long long)(hundredths / 100),
                  (unsigned long long)(hundredths % 100 / 10), kUnits[unit]);
  else
    std::snprintf(buf, sizeof buf, "%llu.%02llu %s", (unsigned long long)(hundredths / 100),
                  (unsigned long long)(hundredths % 100), kUnits[unit]);
  return buf;
}

std::optional<uint64_t> checked_mul(uint64_t a, uint64_t b) {
  uint64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

}  // namespace moepage::pager
