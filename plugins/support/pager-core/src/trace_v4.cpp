#include "trace_v4.hpp"

#include <string>

namespace moepage::pager {

using trace_fields::LineError;
using trace_fields::shown;

namespace {

size_t decimal_digits(uint64_t v) {
  size_t n = 1;
  while (v >= 10) {
    v /= 10;
    ++n;
  }
  return n;
}

constexpr std::string_view kExpected =
    "expected 't TOKEN', 'a LAYER EXPERT...', 'h LAYER EXPERT...' or 'p LAYER EXPERT...', got ";

}  // namespace

TraceV4Reader::TraceV4Reader(Trace& trace)
    // A kind letter and space, then a 20-digit token or a layer, then every expert once with its
    // space: past this a line cannot be valid, so the error says so instead of naming a field.
    : trace_(trace),
      max_line_(2 + 20 + size_t(trace.meta.experts) * (1 + decimal_digits(trace.meta.experts - 1))),
      stamp_(trace.meta.experts, 0) {}

void TraceV4Reader::line(std::string_view line, const LineError& err) {
  if (line.size() > max_line_)
    err("the line is " + std::to_string(line.size()) + " bytes, longer than any v4 line with experts=" +
        std::to_string(trace_.meta.experts) + " (at most " + std::to_string(max_line_) + ")");
  if (line.size() < 2 || line[1] != ' ') err(std::string(kExpected) + shown(line));
  switch (line[0]) {
    case 't': return token_line(line, err);
    case 'a':
    case 'h':
    case 'p': return experts_line(line, err);
    default: err(std::string(kExpected) + shown(line));
  }
}

void TraceV4Reader::token_line(std::string_view line, const LineError& err) {
  const std::string_view field = line.substr(2);
  uint64_t token = 0;
  if (!trace_fields::parse_uint(field, UINT64_MAX, token)) err("token " + shown(field) + " is not a number");
  if (token_seen_ && token <= token_)
    err("token " + std::to_string(token) + " comes after token " + std::to_string(token_) +
        " (each 't' line starts a later token)");
  token_ = token;
  token_seen_ = true;
  request_layer_ = UINT32_MAX;
}

void TraceV4Reader::experts_line(std::string_view line, const LineError& err) {
  const char kind = line[0];
  const std::string what = kind == 'a' ? "request" : kind == 'h' ? "hint call" : "prediction";
  if (!token_seen_) err("a " + what + " before the first 't TOKEN' line");
  std::string_view rest = line.substr(2);
  const size_t space = rest.find(' ');
  if (space == std::string_view::npos)
    err("expected '" + std::string(1, kind) + " LAYER EXPERT...' with at least one expert, got " + shown(line));
  const uint32_t layer = trace_fields::parse_layer(rest.substr(0, space), trace_.meta, err);
  const std::string where = "(token " + std::to_string(token_) + ", layer " + std::to_string(layer) + ")";
  if (kind == 'a' && layer == request_layer_)
    err("a second request in a row " + where + ": one line holds the whole request; two would read back as one");
  ++line_id_;
  rest = rest.substr(space + 1);
  for (uint32_t rank = 0;; ++rank) {
    const size_t next = rest.find(' ');
    const uint32_t expert = trace_fields::parse_expert(rest.substr(0, next), trace_.meta, err);
    if (stamp_[expert] == line_id_)
      err("expert " + std::to_string(expert) + " appears twice in one " + what + " " + where);
    stamp_[expert] = line_id_;
    if (kind == 'a') {
      trace_.rows.push_back(TraceRow{token_, layer, expert, 0, 0});
    } else {
      const HintSource source = kind == 'h' ? HintSource::Arch : HintSource::Predictor;
      trace_.hints.push_back(TraceHint{token_, layer, expert, rank, trace_.rows.size(), source});
    }
    if (next == std::string_view::npos) break;
    rest = rest.substr(next + 1);
  }
  request_layer_ = kind == 'a' ? layer : UINT32_MAX;
}

}  // namespace moepage::pager
