#include "trace_fields.hpp"

#include "moepage/pager_core/errors.hpp"

namespace moepage::pager::trace_fields {

void LineError::operator()(const std::string& what) const {
  throw PagerError(ErrorKind::Format, std::string(name) + " line " + std::to_string(line) + ": " + what);
}

bool parse_uint(std::string_view s, uint64_t max, uint64_t& out) {
  if (s.empty()) return false;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    const uint64_t digit = uint64_t(c - '0');
    if (digit > max || v > (max - digit) / 10) return false;
    v = v * 10 + digit;
  }
  out = v;
  return true;
}

// GCC 12 at -O2 and above reports a bogus -Wrestrict overlap inside libstdc++ for a literal plus a
// std::string; nothing overlaps here.
#if defined(__GNUC__) && !defined(__clang__)  // clang knows no such warning: it would warn of the name
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wrestrict"
#endif
std::string shown(std::string_view s) { return "'" + std::string(s.substr(0, 60)) + (s.size() > 60 ? "...'" : "'"); }
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

namespace {

// An index below `count`; errors call it `what` ("layer 7 is out of range (layers=4)").
uint32_t parse_index(std::string_view s, const char* what, uint32_t count, const LineError& err) {
  uint64_t v = 0;
  if (!parse_uint(s, UINT32_MAX, v)) err(std::string(what) + " " + shown(s) + " is not a number");
  if (v >= count)
    err(std::string(what) + " " + std::to_string(v) + " is out of range (" + what + "s=" + std::to_string(count) + ")");
  return uint32_t(v);
}

}  // namespace

uint32_t parse_layer(std::string_view s, const TraceMeta& meta, const LineError& err) {
  return parse_index(s, "layer", meta.layers, err);
}

uint32_t parse_expert(std::string_view s, const TraceMeta& meta, const LineError& err) {
  return parse_index(s, "expert", meta.experts, err);
}

}  // namespace moepage::pager::trace_fields
