#include "moepage/pager_core/trace.hpp"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "moepage/pager_core/errors.hpp"
#include "text_lines.hpp"
#include "trace_fields.hpp"
#include "trace_v4.hpp"

namespace moepage::pager {

namespace {

using trace_fields::LineError;
using trace_fields::parse_uint;
using trace_fields::shown;

TraceMeta parse_header(std::string_view line, const LineError& err) {
  constexpr std::string_view kPrefix = "# moepage-trace ";
  if (line.substr(0, kPrefix.size()) != kPrefix)
    err("expected the header '# moepage-trace vN layers=L experts=E [top_k=K]', got " + shown(line));
  std::string_view rest = line.substr(kPrefix.size());
  bool version_seen = false, layers_seen = false, experts_seen = false;
  TraceMeta meta;
  while (!rest.empty()) {
    const size_t sp = rest.find(' ');
    const std::string_view word = rest.substr(0, sp);
    rest = sp == std::string_view::npos ? std::string_view{} : rest.substr(sp + 1);
    if (word.empty()) continue;
    if (!version_seen) {
      if (word != "v1" && word != "v2" && word != "v3" && word != "v4")
        err("trace format " + shown(word) + " is not supported (expected v1, v2, v3 or v4)");
      meta.version = uint32_t(word[1] - '0');
      version_seen = true;
      continue;
    }
    const size_t eq = word.find('=');
    if (eq == std::string_view::npos) err("header field " + shown(word) + " is not key=value");
    const std::string_view key = word.substr(0, eq), value = word.substr(eq + 1);
    uint64_t v = 0;
    const bool known = key == "layers" || key == "experts" || key == "top_k";
    if (!known) continue;  // newer writers may add keys
    if (!parse_uint(value, UINT32_MAX, v))
      err("header field " + std::string(key) + " needs a number, got " + shown(value));
    if (key == "layers") {
      if (v == 0 || v > kTraceMaxLayers)
        err("layers=" + std::to_string(v) + " must be in 1.." + std::to_string(kTraceMaxLayers));
      meta.layers = uint32_t(v);
      layers_seen = true;
    } else if (key == "experts") {
      if (v == 0 || v > kTraceMaxExperts)
        err("experts=" + std::to_string(v) + " must be in 1.." + std::to_string(kTraceMaxExperts));
      meta.experts = uint32_t(v);
      experts_seen = true;
    } else {
      meta.top_k = uint32_t(v);
    }
  }
  if (!version_seen) err("the header names no format version (expected v1, v2, v3 or v4)");
  if (!layers_seen || !experts_seen) err("the header needs layers=L and experts=E");
  if (meta.top_k > meta.experts)
    err("top_k=" + std::to_string(meta.top_k) + " exceeds experts=" + std::to_string(meta.experts));
  return meta;
}

// Splits at commas into at most `max` fields (one more means "too many"); returns the count.
int split_fields(std::string_view line, std::string_view* field, int max) {
  int count = 0;
  while (count < max) {
    const size_t comma = line.find(',');
    field[count++] = line.substr(0, comma);
    if (comma == std::string_view::npos) break;
    line = line.substr(comma + 1);
  }
  return count;
}

// The reader of v1-v3 lines: one event per line, a request being a run of access rows.
class TraceV3Reader {
 public:
  explicit TraceV3Reader(Trace& trace) : trace_(trace), group_stamp_(trace.meta.experts, 0) {}
  // One line after the header that is neither blank nor a comment.
  void line(std::string_view line, const LineError& err);

 private:
  void hint_row(std::string_view line, bool is_hint, const LineError& err);
  void access_row(std::string_view line, const LineError& err);
  void check_token(uint64_t token, const LineError& err) const {
    if (any_row_ && token < last_token_)
      err("token " + std::to_string(token) + " comes after token " + std::to_string(last_token_) +
          " (tokens must not decrease)");
  }

  Trace& trace_;
  std::vector<uint64_t> group_stamp_;  // [expert] which request or call last named the expert
  uint64_t group_ = 0, last_token_ = 0;
  uint32_t last_layer_ = UINT32_MAX;
  int fields_per_row_ = 0;
  bool first_data_ = true;
  bool any_row_ = false;  // an access or hint row was read (last_token_ is set)
  bool in_hint_ = false;  // the last row read was a hint row
};

void TraceV3Reader::line(std::string_view line, const LineError& err) {
  const bool first = first_data_;
  first_data_ = false;
  if (first && (line == "token,layer,expert" || line == "token,layer,expert,hit,prefetched")) return;
  constexpr std::string_view kHint = "hint,", kPredict = "predict,";
  if (line.substr(0, kHint.size()) == kHint) return hint_row(line, true, err);
  if (line.substr(0, kPredict.size()) == kPredict) return hint_row(line, false, err);
  access_row(line, err);
}

void TraceV3Reader::hint_row(std::string_view line, bool is_hint, const LineError& err) {
  const std::string kind = is_hint ? "hint" : "predict";
  const uint32_t version = trace_.meta.version;
  if (is_hint && version < 2) err("hint rows need a v2 or v3 trace (the header says v1)");
  if (!is_hint && version < 3) err("predict rows need a v3 trace (the header says v" + std::to_string(version) + ")");
  std::string_view field[5];
  if (split_fields(line.substr(kind.size() + 1), field, 5) != 4)
    err("expected " + kind + ",token,layer,expert,rank, got " + shown(line));
  TraceHint hint;
  hint.source = is_hint ? HintSource::Arch : HintSource::Predictor;
  uint64_t v = 0;
  if (!parse_uint(field[0], UINT64_MAX, hint.token)) err("token " + shown(field[0]) + " is not a number");
  hint.layer = trace_fields::parse_layer(field[1], trace_.meta, err);
  hint.expert = trace_fields::parse_expert(field[2], trace_.meta, err);
  if (!parse_uint(field[3], UINT32_MAX, v)) err("rank " + shown(field[3]) + " is not a number");
  hint.rank = uint32_t(v);
  check_token(hint.token, err);
  const bool continues =
      in_hint_ && hint.token == last_token_ && hint.layer == last_layer_ && trace_.hints.back().source == hint.source;
  if (hint.rank != 0 && (!continues || hint.rank != trace_.hints.back().rank + 1))
    err(kind + " rank " + std::to_string(hint.rank) + " continues no " + kind + " call (token " +
        std::to_string(hint.token) + ", layer " + std::to_string(hint.layer) +
        "): a call starts at rank 0 and counts up by one");
  if (hint.rank == 0) ++group_;
  if (group_stamp_[hint.expert] == group_)
    err("expert " + std::to_string(hint.expert) + " appears twice in one " + kind + " (token " +
        std::to_string(hint.token) + ", layer " + std::to_string(hint.layer) + ")");
  group_stamp_[hint.expert] = group_;
  hint.before_row = trace_.rows.size();
  last_token_ = hint.token;
  last_layer_ = hint.layer;
  in_hint_ = true;
  any_row_ = true;
  trace_.hints.push_back(hint);
}

void TraceV3Reader::access_row(std::string_view line, const LineError& err) {
  std::string_view field[6];
  const int count = split_fields(line, field, 6);
  if (count != 3 && count != 5) err("expected token,layer,expert[,hit,prefetched], got " + shown(line));
  if (fields_per_row_ == 0) {
    fields_per_row_ = count;
    trace_.has_outcomes = count == 5;
  } else if (count != fields_per_row_) {
    err("has " + std::to_string(count) + " fields but earlier rows have " + std::to_string(fields_per_row_));
  }
  TraceRow row;
  uint64_t v = 0;
  if (!parse_uint(field[0], UINT64_MAX, row.token)) err("token " + shown(field[0]) + " is not a number");
  row.layer = trace_fields::parse_layer(field[1], trace_.meta, err);
  row.expert = trace_fields::parse_expert(field[2], trace_.meta, err);
  if (count == 5) {
    if (!parse_uint(field[3], 1, v)) err("hit " + shown(field[3]) + " must be 0 or 1");
    row.hit = uint8_t(v);
    if (!parse_uint(field[4], 1, v)) err("prefetched " + shown(field[4]) + " must be 0 or 1");
    row.prefetched = uint8_t(v);
  }
  check_token(row.token, err);
  // A hint between two accesses means two acquires, even of the same layer and token.
  if (in_hint_ || trace_.rows.empty() || row.token != last_token_ || row.layer != last_layer_) ++group_;
  if (group_stamp_[row.expert] == group_)
    err("expert " + std::to_string(row.expert) + " appears twice in one request (token " + std::to_string(row.token) +
        ", layer " + std::to_string(row.layer) + ")");
  group_stamp_[row.expert] = group_;
  last_token_ = row.token;
  last_layer_ = row.layer;
  in_hint_ = false;
  any_row_ = true;
  trace_.rows.push_back(row);
}

}  // namespace

Trace parse_trace(std::string_view text, std::string_view name) {
  Trace trace;
  std::optional<TraceV3Reader> v3;
  std::optional<TraceV4Reader> v4;
  for_each_line(text, [&](std::string_view line, size_t line_no) {
    const LineError err{name, line_no};
    if (!v3 && !v4) {
      if (line.empty()) return;
      trace.meta = parse_header(line, err);
      if (trace.meta.version == 4) v4.emplace(trace);
      else v3.emplace(trace);
      return;
    }
    if (line.empty() || line.front() == '#') return;
    if (v4) v4->line(line, err);
    else v3->line(line, err);
  });
  if (!v3 && !v4) throw PagerError(ErrorKind::Format, std::string(name) + ": empty trace (no header line)");
  return trace;
}

std::string trace_header(const TraceMeta& meta) {
  // The row writers below write v1-v3 lines only; a v4 trace's meta is written as v3, the version
  // of the rows that will follow, so a trace read from v4 and written again reads back.
  const uint32_t version = std::min(meta.version, kTraceVersion);
  std::string s = "# moepage-trace v" + std::to_string(version) + " layers=" + std::to_string(meta.layers) +
                  " experts=" + std::to_string(meta.experts);
  if (meta.top_k) s += " top_k=" + std::to_string(meta.top_k);
  return s + "\n";
}

size_t format_trace_row(const TraceRow& row, bool with_outcomes, std::span<char> buf) {
  const int n =
      with_outcomes
          ? std::snprintf(buf.data(), buf.size(), "%llu,%u,%u,%u,%u\n", (unsigned long long)row.token, row.layer,
                          row.expert, unsigned(row.hit), unsigned(row.prefetched))
          : std::snprintf(buf.data(), buf.size(), "%llu,%u,%u\n", (unsigned long long)row.token, row.layer, row.expert);
  if (n < 0 || size_t(n) >= buf.size()) return 0;
  return size_t(n);
}

size_t format_trace_hint(const TraceHint& hint, std::span<char> buf) {
  const int n =
      std::snprintf(buf.data(), buf.size(), "%s,%llu,%u,%u,%u\n", hint.source == HintSource::Arch ? "hint" : "predict",
                    (unsigned long long)hint.token, hint.layer, hint.expert, hint.rank);
  if (n < 0 || size_t(n) >= buf.size()) return 0;
  return size_t(n);
}

}  // namespace moepage::pager
