// Field parsing shared by the trace line readers (trace.cpp for v1-v3, trace_v4.cpp for v4), so
// both formats refuse the same bad numbers with the same words.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "moepage/pager_core/trace.hpp"

namespace moepage::pager::trace_fields {

// Throws PagerError(ErrorKind::Format) as "NAME line N: WHAT".
struct LineError {
  std::string_view name;
  size_t line;
  [[noreturn]] void operator()(const std::string& what) const;
};

// Strict unsigned decimal: digits only, no sign or spaces; false on overflow beyond `max`.
bool parse_uint(std::string_view s, uint64_t max, uint64_t& out);
// The text quoted for an error message, cut at 60 characters.
std::string shown(std::string_view s);
// A layer below meta.layers / an expert below meta.experts, or the error naming the bound.
uint32_t parse_layer(std::string_view s, const TraceMeta& meta, const LineError& err);
uint32_t parse_expert(std::string_view s, const TraceMeta& meta, const LineError& err);

}  // namespace moepage::pager::trace_fields
