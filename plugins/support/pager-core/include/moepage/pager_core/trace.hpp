// Expert-access traces: what `moepage run --trace FILE` writes and `moepage simulate` reads.
//
// Format v1-v3 (text, one event per line, in the order the pager saw them; what the live run writes):
//   # moepage-trace v3 layers=43 experts=256 top_k=6      <- first line; top_k is optional,
//                                                            unknown key=value pairs are ignored
//   token,layer,expert[,hit,prefetched]                     <- optional column-name line
//   hint,0,0,17,0                                           <- v2+: hint,token,layer,expert,rank
//   predict,0,4,33,0                                        <- v3: predict,token,layer,expert,rank
//   0,0,17,0,0                                              <- access rows: 3 fields, or 5 with outcomes
//   # any later line starting with '#' is a comment; blank lines are ignored
// Access rows all have the same field count. token never decreases (over access and hint rows).
// Consecutive access rows with the same (token, layer) and no hint row between them are one
// request (one acquire) and may not repeat an expert. hit and prefetched are 0 or 1: the live
// pager's outcome, kept so a simulation can be set beside it.
// A hint row is one expert of one hint(layer, ranked experts) call the architecture made to the
// pager (hash-routed layers know their experts from the token ids before the step): rank 0 starts
// a call, and the rows of one call follow each other with ranks 1, 2, ... and distinct experts.
// The simulator replays them where they were recorded, so a simulated pager prefetches what the
// live one was told to.
// A predict row is one expert a pager's predictor proposed for `layer` (an adapter, from the state
// after layer - 1), ranked the same way; the live adapter-prefetch pager prefetched exactly these.
// The simulator replays them only for policies that prefetch predictions (lru+prefetch, ...).
// v1 is v2 without hint rows, v2 is v3 without predict rows; all load.
//
// Format v4 (text, one line per call rather than per expert, so that a 256-expert trace stays small
// enough to commit; tools/train writes it, tools/train/trace_to_v4.py converts v1-v3 files):
//   # moepage-trace v4 layers=43 experts=256 top_k=6      <- the same header, version 4
//   t 0                       <- token 0 begins; tokens strictly increase from line to line
//   h 0 17 3 9 40 2 11        <- one hint call for layer 0, its experts in rank order
//   a 0 2 3 9 11 17 40        <- one request (acquire) at layer 0 of the token: distinct experts
//   p 4 33 1 7 20 5 60        <- one prediction for layer 4, its experts in rank order
// Fields are separated by one space; comments and blank lines as above; every a/h/p line names at
// least one expert, none twice, and follows a t line; a line longer than any valid one for the
// header's experts is refused before its fields are read. Two requests of one layer and token in a row
// are refused: the Trace keeps no request boundaries, so they would read back as one. A v4 file
// gives exactly the Trace its v3 equivalent gives (same rows, hints, ranks and before_row), but
// carries no hit/prefetched outcomes: has_outcomes is false and a live run keeps writing v3.
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

inline constexpr uint32_t kTraceVersion = 3;  // what trace_header writes (the live run's trace)

struct TraceMeta {
  uint32_t layers = 0;
  uint32_t experts = 0;
  uint32_t top_k = 0;  // 0: not given
  uint32_t version = kTraceVersion;
};

struct TraceRow {
  uint64_t token = 0;
  uint32_t layer = 0;
  uint32_t expert = 0;
  uint8_t hit = 0;
  uint8_t prefetched = 0;
  bool operator==(const TraceRow&) const = default;
};

// Who proposed a hinted expert: the architecture (hint rows) or the pager's predictor (predict rows).
enum class HintSource : uint8_t { Arch, Predictor };

// One expert of one recorded hint call, or of one prediction.
struct TraceHint {
  uint64_t token = 0;
  uint32_t layer = 0;
  uint32_t expert = 0;
  uint32_t rank = 0;        // position in the call's ranked list; 0 starts a call
  uint64_t before_row = 0;  // index into Trace::rows of the first access row recorded after it
  HintSource source = HintSource::Arch;
  bool operator==(const TraceHint&) const = default;
};

struct Trace {
  TraceMeta meta;
  bool has_outcomes = false;  // rows carry hit and prefetched
  std::vector<TraceRow> rows;
  std::vector<TraceHint> hints;  // hint and predict rows, in trace order
};

// Throws PagerError(ErrorKind::Format) naming `name` and the line.
Trace parse_trace(std::string_view text, std::string_view name);
// The largest trace read, as a file or decompressed (4 GiB of text is about 300 million rows).
inline constexpr uint64_t kMaxTraceFileBytes = uint64_t(4) << 30;
// A trace file: plain text, or xz-compressed when the name ends in ".xz" (decoded with liblzma,
// so a pager plugin can read the committed compressed traces without running a program). Only a
// regular file is read (a device or FIFO is refused), of at most kMaxTraceFileBytes on disk and
// decompressed.
Trace read_trace_file(const std::string& path);

// "# moepage-trace vV layers=L experts=E top_k=K\n" (top_k left out when 0); V is meta.version, but
// 3 for a v4 meta: the writers here write v1-v3 lines, which a v4 header would refuse.
std::string trace_header(const TraceMeta& meta);
// One row with its newline into buf, without allocating; returns the bytes written, 0 if buf is
// too small (64 bytes always suffice).
size_t format_trace_row(const TraceRow& row, bool with_outcomes, std::span<char> buf);
// One hint row ("hint,token,layer,expert,rank\n", or "predict,..." for a predictor's), the same way.
size_t format_trace_hint(const TraceHint& hint, std::span<char> buf);

}  // namespace moepage::pager
