#include "moepage/pager_core/trace.hpp"

#include <cerrno>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cstdio>
#include <cstring>
#include <memory>

#include "moepage/pager_core/errors.hpp"

namespace moepage::pager {

namespace {

struct LineError {
  std::string_view name;
  size_t line;
  [[noreturn]] void operator()(const std::string& what) const {
    throw PagerError(ErrorKind::Format, std::string(name) + " line " + std::to_string(line) + ": " + what);
  }
};

// Strict unsigned decimal: digits only, no sign or spaces; false on overflow beyond `max`.
bool parse_uint(std::string_view s, uint64_t max, uint64_t& out) {
  if (s.empty()) return false;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    const uint64_t digit = uint64_t(c - '0');
    if (digit > max || v > (max - digit) / 10) return false;
    v = v * 10 + uint64_t(c - '0');
  }
  out = v;
  return true;
}

std::string shown(std::string_view s) { return "'" + std::string(s.substr(0, 60)) + (s.size() > 60 ? "...'" : "'"); }

TraceMeta parse_header(std::string_view line, const LineError& err) {
  constexpr std::string_view kPrefix = "# moepage-trace ";
  if (line.substr(0, kPrefix.size()) != kPrefix)
    err("expected the header '# moepage-trace v3 layers=L experts=E [top_k=K]', got " + shown(line));
  std::string_view rest = line.substr(kPrefix.size());
  bool version_seen = false, layers_seen = false, experts_seen = false;
  TraceMeta meta;
  while (!rest.empty()) {
    const size_t sp = rest.find(' ');
    const std::string_view word = rest.substr(0, sp);
    rest = sp == std::string_view::npos ? std::string_view{} : rest.substr(sp + 1);
    if (word.empty()) continue;
    if (!version_seen) {
      if (word != "v1" && word != "v2" && word != "v3")
        err("trace format " + shown(word) + " is not supported (expected v1, v2 or v3)");
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
    if (!parse_uint(value, UINT32_MAX, v)) err("header field " + std::string(key) + " needs a number, got " + shown(value));
    if (key == "layers") {
      if (v == 0 || v > kTraceMaxLayers) err("layers=" + std::to_string(v) + " must be in 1.." + std::to_string(kTraceMaxLayers));
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
  if (!version_seen) err("the header names no format version (expected v1, v2 or v3)");
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

uint32_t parse_layer(std::string_view s, const TraceMeta& meta, const LineError& err) {
  uint64_t v = 0;
  if (!parse_uint(s, UINT32_MAX, v)) err("layer " + shown(s) + " is not a number");
  if (v >= meta.layers) err("layer " + std::to_string(v) + " is out of range (layers=" + std::to_string(meta.layers) + ")");
  return uint32_t(v);
}

uint32_t parse_expert(std::string_view s, const TraceMeta& meta, const LineError& err) {
  uint64_t v = 0;
  if (!parse_uint(s, UINT32_MAX, v)) err("expert " + shown(s) + " is not a number");
  if (v >= meta.experts)
    err("expert " + std::to_string(v) + " is out of range (experts=" + std::to_string(meta.experts) + ")");
  return uint32_t(v);
}

}  // namespace

Trace parse_trace(std::string_view text, std::string_view name) {
  Trace trace;
  size_t pos = 0, line_no = 0;
  bool header_done = false, first_data = true;
  int fields_per_row = 0;
  std::vector<uint64_t> group_stamp;  // [expert] which request last named the expert
  uint64_t group = 0, last_token = 0;
  uint32_t last_layer = UINT32_MAX;
  bool any_row = false;  // an access or hint row was read (last_token is set)
  bool in_hint = false;  // the last row read was a hint row
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const LineError err{name, line_no};
    if (!header_done) {
      if (line.empty()) continue;
      trace.meta = parse_header(line, err);
      group_stamp.assign(trace.meta.experts, 0);
      header_done = true;
      continue;
    }
    if (line.empty() || line.front() == '#') continue;
    if (first_data && (line == "token,layer,expert" || line == "token,layer,expert,hit,prefetched")) {
      first_data = false;
      continue;
    }
    first_data = false;
    std::string_view field[6];
    constexpr std::string_view kHint = "hint,", kPredict = "predict,";
    const bool is_hint = line.substr(0, kHint.size()) == kHint;
    const bool is_predict = !is_hint && line.substr(0, kPredict.size()) == kPredict;
    if (is_hint || is_predict) {
      const std::string_view kind = is_hint ? "hint" : "predict";
      if (is_hint && trace.meta.version < 2) err("hint rows need a v2 or v3 trace (the header says v1)");
      if (is_predict && trace.meta.version < 3)
        err("predict rows need a v3 trace (the header says v" + std::to_string(trace.meta.version) + ")");
      if (split_fields(line.substr(is_hint ? kHint.size() : kPredict.size()), field, 5) != 4)
        err("expected " + std::string(kind) + ",token,layer,expert,rank, got " + shown(line));
      TraceHint hint;
      hint.source = is_hint ? HintSource::Arch : HintSource::Predictor;
      uint64_t v = 0;
      if (!parse_uint(field[0], UINT64_MAX, hint.token)) err("token " + shown(field[0]) + " is not a number");
      hint.layer = parse_layer(field[1], trace.meta, err);
      hint.expert = parse_expert(field[2], trace.meta, err);
      if (!parse_uint(field[3], UINT32_MAX, v)) err("rank " + shown(field[3]) + " is not a number");
      hint.rank = uint32_t(v);
      if (any_row && hint.token < last_token)
        err("token " + std::to_string(hint.token) + " comes after token " + std::to_string(last_token) +
            " (tokens must not decrease)");
      const bool continues = in_hint && hint.token == last_token && hint.layer == last_layer &&
                             trace.hints.back().source == hint.source;
      if (hint.rank != 0 && (!continues || hint.rank != trace.hints.back().rank + 1))
        err(std::string(kind) + " rank " + std::to_string(hint.rank) + " continues no " + std::string(kind) +
            " call (token " + std::to_string(hint.token) + ", layer " + std::to_string(hint.layer) +
            "): a call starts at rank 0 and counts up by one");
      if (hint.rank == 0) ++group;
      if (group_stamp[hint.expert] == group)
        err("expert " + std::to_string(hint.expert) + " appears twice in one " + std::string(kind) + " (token " +
            std::to_string(hint.token) + ", layer " + std::to_string(hint.layer) + ")");
      group_stamp[hint.expert] = group;
      hint.before_row = trace.rows.size();
      last_token = hint.token;
      last_layer = hint.layer;
      in_hint = true;
      any_row = true;
      trace.hints.push_back(hint);
      continue;
    }
    const int count = split_fields(line, field, 6);
    if (count != 3 && count != 5) err("expected token,layer,expert[,hit,prefetched], got " + shown(line));
    if (fields_per_row == 0) {
      fields_per_row = count;
      trace.has_outcomes = count == 5;
    } else if (count != fields_per_row) {
      err("has " + std::to_string(count) + " fields but earlier rows have " + std::to_string(fields_per_row));
    }
    TraceRow row;
    uint64_t v = 0;
    if (!parse_uint(field[0], UINT64_MAX, row.token)) err("token " + shown(field[0]) + " is not a number");
    row.layer = parse_layer(field[1], trace.meta, err);
    row.expert = parse_expert(field[2], trace.meta, err);
    if (count == 5) {
      if (!parse_uint(field[3], 1, v)) err("hit " + shown(field[3]) + " must be 0 or 1");
      row.hit = uint8_t(v);
      if (!parse_uint(field[4], 1, v)) err("prefetched " + shown(field[4]) + " must be 0 or 1");
      row.prefetched = uint8_t(v);
    }
    if (any_row && row.token < last_token)
      err("token " + std::to_string(row.token) + " comes after token " + std::to_string(last_token) +
          " (tokens must not decrease)");
    // A hint between two accesses means two acquires, even of the same layer and token.
    if (in_hint || trace.rows.empty() || row.token != last_token || row.layer != last_layer) ++group;
    if (group_stamp[row.expert] == group)
      err("expert " + std::to_string(row.expert) + " appears twice in one request (token " + std::to_string(row.token) +
          ", layer " + std::to_string(row.layer) + ")");
    group_stamp[row.expert] = group;
    last_token = row.token;
    last_layer = row.layer;
    in_hint = false;
    any_row = true;
    trace.rows.push_back(row);
  }
  if (!header_done) throw PagerError(ErrorKind::Format, std::string(name) + ": empty trace (no header line)");
  return trace;
}

std::string trace_header(const TraceMeta& meta) {
  std::string s = "# moepage-trace v" + std::to_string(meta.version) + " layers=" + std::to_string(meta.layers) + " experts=" + std::to_string(meta.experts);
  if (meta.top_k) s += " top_k=" + std::to_string(meta.top_k);
  return s + "\n";
}

size_t format_trace_row(const TraceRow& row, bool with_outcomes, std::span<char> buf) {
  const int n = with_outcomes
                    ? std::snprintf(buf.data(), buf.size(), "%llu,%u,%u,%u,%u\n", (unsigned long long)row.token,
                                    row.layer, row.expert, unsigned(row.hit), unsigned(row.prefetched))
                    : std::snprintf(buf.data(), buf.size(), "%llu,%u,%u\n", (unsigned long long)row.token, row.layer,
                                    row.expert);
  if (n < 0 || size_t(n) >= buf.size()) return 0;
  return size_t(n);
}

size_t format_trace_hint(const TraceHint& hint, std::span<char> buf) {
  const int n = std::snprintf(buf.data(), buf.size(), "%s,%llu,%u,%u,%u\n",
                              hint.source == HintSource::Arch ? "hint" : "predict", (unsigned long long)hint.token,
                              hint.layer, hint.expert, hint.rank);
  if (n < 0 || size_t(n) >= buf.size()) return 0;
  return size_t(n);
}

}  // namespace moepage::pager
