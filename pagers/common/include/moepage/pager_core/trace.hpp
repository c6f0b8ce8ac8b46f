// Expert-access traces: what `moepage run --trace FILE` writes and `moepage simulate` reads.
//
// Format (text, one access per line, in the order the pager saw them):
//   # moepage-trace v1 layers=43 experts=256 top_k=6      <- first line; top_k is optional,
//                                                            unknown key=value pairs are ignored
//   token,layer,expert[,hit,prefetched]                     <- optional column-name line
//   0,0,17,0,0                                              <- rows: 3 fields, or 5 with outcomes
//   # any later line starting with '#' is a comment; blank lines are ignored
// Rows all have the same field count. token never decreases. Consecutive rows with the same
// (token, layer) are one request (one acquire) and may not repeat an expert. hit and
// prefetched are 0 or 1: the live pager's outcome, kept so a simulation can be set beside it.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace moepage::pager {

// Sanity bounds that keep a hostile header from sizing huge tables.
inline constexpr uint32_t kTraceMaxLayers = 1u << 16;
inline constexpr uint32_t kTraceMaxExperts = 1u << 20;

struct TraceMeta {
  uint32_t layers = 0;
  uint32_t experts = 0;
  uint32_t top_k = 0;  // 0: not given
};

struct TraceRow {
  uint64_t token = 0;
  uint32_t layer = 0;
  uint32_t expert = 0;
  uint8_t hit = 0;
  uint8_t prefetched = 0;
};

struct Trace {
  TraceMeta meta;
  bool has_outcomes = false;  // rows carry hit and prefetched
  std::vector<TraceRow> rows;
};

// Throws PagerError(ErrorKind::Format) naming `name` and the line.
Trace parse_trace(std::string_view text, std::string_view name);
Trace read_trace_file(const std::string& path);

// "# moepage-trace v1 layers=L experts=E top_k=K\n" (top_k left out when 0).
std::string trace_header(const TraceMeta& meta);
// One row with its newline into buf, without allocating; returns the bytes written, 0 if buf is
// too small (64 bytes always suffice).
size_t format_trace_row(const TraceRow& row, bool with_outcomes, std::span<char> buf);

}  // namespace moepage::pager
