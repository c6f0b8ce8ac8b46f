// The reader of v4 trace lines (see trace.hpp): one line per token start, per request, and per
// hint or prediction call, filling the same Trace a v3 file of the same events gives.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "moepage/pager_core/trace.hpp"
#include "trace_fields.hpp"

namespace moepage::pager {

class TraceV4Reader {
 public:
  // trace.meta is the parsed header; rows and hints are appended to.
  explicit TraceV4Reader(Trace& trace);
  // One line after the header that is neither blank nor a comment.
  void line(std::string_view line, const trace_fields::LineError& err);

 private:
  void token_line(std::string_view line, const trace_fields::LineError& err);
  void experts_line(std::string_view line, const trace_fields::LineError& err);

  Trace& trace_;
  size_t max_line_;              // the longest line a valid file of this header can need
  std::vector<uint64_t> stamp_;  // [expert] the line that last named the expert
  uint64_t line_id_ = 0;
  uint64_t token_ = 0;
  bool token_seen_ = false;
  // The layer of the request on the previous line, UINT32_MAX when that line was something else:
  // two requests of one layer in a row would read back as one (requests are not delimited in Trace).
  uint32_t request_layer_ = UINT32_MAX;
};

}  // namespace moepage::pager
