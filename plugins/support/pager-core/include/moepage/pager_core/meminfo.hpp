// A parser for /proc/meminfo-format text ("MemAvailable:   12345678 kB"). Takes text, not a
// path, so tests feed it anything; the caller reads the file.
#pragma once
#include <cstdint>
#include <optional>
#include <string_view>

namespace moepage::pager {

struct MemInfo {
  std::optional<uint64_t> mem_total;      // bytes
  std::optional<uint64_t> mem_free;       // bytes
  std::optional<uint64_t> mem_available;  // bytes
};

// Every non-blank line must read "<key>: <number>" optionally followed by " kB". Throws
// PagerError(ErrorKind::Format) naming `source` and the line otherwise.
MemInfo parse_meminfo(std::string_view text, std::string_view source = "/proc/meminfo");

// MemAvailable in bytes; throws naming `source` when the text has none.
uint64_t mem_available_bytes(std::string_view text, std::string_view source = "/proc/meminfo");

}  // namespace moepage::pager
