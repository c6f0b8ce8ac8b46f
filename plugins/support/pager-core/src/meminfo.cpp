#include "moepage/pager_core/meminfo.hpp"

#include <string>

#include "moepage/pager_core/errors.hpp"
#include "text_lines.hpp"
#include "units/byte_size.hpp"

namespace moepage::pager {

namespace {

bool is_space(char c) { return c == ' ' || c == '\t'; }

[[noreturn]] void bad_line(std::string_view source, size_t line_no, std::string_view line, const char* why) {
  std::string shown(line.substr(0, 80));
  throw PagerError(ErrorKind::Format, std::string(source) + " line " + std::to_string(line_no) + ": " + why +
                                          " (expected '<key>: <number> kB', got '" + shown + "')");
}

}  // namespace

MemInfo parse_meminfo(std::string_view text, std::string_view source) {
  MemInfo info;
  size_t lines_seen = 0;
  for_each_line(text, [&](std::string_view line, size_t line_no) {
    while (!line.empty() && (is_space(line.back()) || line.back() == '\r')) line.remove_suffix(1);
    if (line.empty()) return;
    ++lines_seen;
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0) bad_line(source, line_no, line, "no key");
    const std::string_view key = line.substr(0, colon);
    size_t i = colon + 1;
    while (i < line.size() && is_space(line[i])) ++i;
    if (i == line.size() || line[i] < '0' || line[i] > '9') bad_line(source, line_no, line, "no number");
    uint64_t value = 0;
    for (; i < line.size() && line[i] >= '0' && line[i] <= '9'; ++i) {
      if (__builtin_mul_overflow(value, 10u, &value) || __builtin_add_overflow(value, uint64_t(line[i] - '0'), &value))
        bad_line(source, line_no, line, "number too large");
    }
    while (i < line.size() && is_space(line[i])) ++i;
    const std::string_view unit = line.substr(i);
    uint64_t bytes = value;
    if (unit == "kB") {
      const auto scaled = units::checked_mul(value, 1024);
      if (!scaled) bad_line(source, line_no, line, "number too large");
      bytes = *scaled;
    } else if (!unit.empty()) {
      bad_line(source, line_no, line, "unknown unit");
    }
    if (key == "MemTotal") info.mem_total = bytes;
    else if (key == "MemFree") info.mem_free = bytes;
    else if (key == "MemAvailable") info.mem_available = bytes;
  });
  if (lines_seen == 0) throw PagerError(ErrorKind::Format, std::string(source) + ": is empty");
  return info;
}

uint64_t mem_available_bytes(std::string_view text, std::string_view source) {
  const MemInfo info = parse_meminfo(text, source);
  if (!info.mem_available) throw PagerError(ErrorKind::Format, std::string(source) + ": has no MemAvailable line");
  return *info.mem_available;
}

}  // namespace moepage::pager
