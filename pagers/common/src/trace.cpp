#include "moepage/pager_core/trace.hpp"

#include <cerrno>
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
    err("expected the header '# moepage-trace v1 layers=L experts=E [top_k=K]', got " + shown(line));
  std::string_view rest = line.substr(kPrefix.size());
  bool version_seen = false, layers_seen = false, experts_seen = false;
  TraceMeta meta;
  while (!rest.empty()) {
    const size_t sp = rest.find(' ');
    const std::string_view word = rest.substr(0, sp);
    rest = sp == std::string_view::npos ? std::string_view{} : rest.substr(sp + 1);
    if (word.empty()) continue;
    if (!version_seen) {
      if (word != "v1") err("trace format " + shown(word) + " is not supported (expected v1)");
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
  if (!version_seen) err("the header names no format version (expected v1)");
  if (!layers_seen || !experts_seen) err("the header needs layers=L and experts=E");
  if (meta.top_k > meta.experts)
    err("top_k=" + std::to_string(meta.top_k) + " exceeds experts=" + std::to_string(meta.experts));
  return meta;
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
    int count = 0;
    std::string_view rest = line;
    while (count < 6) {
      const size_t comma = rest.find(',');
      field[count++] = rest.substr(0, comma);
      if (comma == std::string_view::npos) break;
      rest = rest.substr(comma + 1);
    }
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
    if (!parse_uint(field[1], UINT32_MAX, v)) err("layer " + shown(field[1]) + " is not a number");
    if (v >= trace.meta.layers)
      err("layer " + std::to_string(v) + " is out of range (layers=" + std::to_string(trace.meta.layers) + ")");
    row.layer = uint32_t(v);
    if (!parse_uint(field[2], UINT32_MAX, v)) err("expert " + shown(field[2]) + " is not a number");
    if (v >= trace.meta.experts)
      err("expert " + std::to_string(v) + " is out of range (experts=" + std::to_string(trace.meta.experts) + ")");
    row.expert = uint32_t(v);
    if (count == 5) {
      if (!parse_uint(field[3], 1, v)) err("hit " + shown(field[3]) + " must be 0 or 1");
      row.hit = uint8_t(v);
      if (!parse_uint(field[4], 1, v)) err("prefetched " + shown(field[4]) + " must be 0 or 1");
      row.prefetched = uint8_t(v);
    }
    if (!trace.rows.empty() && row.token < last_token)
      err("token " + std::to_string(row.token) + " comes after token " + std::to_string(last_token) +
          " (tokens must not decrease)");
    if (trace.rows.empty() || row.token != last_token || row.layer != last_layer) ++group;
    if (group_stamp[row.expert] == group)
      err("expert " + std::to_string(row.expert) + " appears twice in one request (token " + std::to_string(row.token) +
          ", layer " + std::to_string(row.layer) + ")");
    group_stamp[row.expert] = group;
    last_token = row.token;
    last_layer = row.layer;
    trace.rows.push_back(row);
  }
  if (!header_done) throw PagerError(ErrorKind::Format, std::string(name) + ": empty trace (no header line)");
  return trace;
}

Trace read_trace_file(const std::string& path) {
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) throw PagerError(ErrorKind::Format, path + ": cannot open the trace (" + std::strerror(errno) + ")");
  std::string text;
  char buf[1 << 16];
  size_t got;
  while ((got = std::fread(buf, 1, sizeof buf, f.get())) > 0) text.append(buf, got);
  if (std::ferror(f.get())) throw PagerError(ErrorKind::Format, path + ": read failed (" + std::strerror(errno) + ")");
  return parse_trace(text, path);
}

std::string trace_header(const TraceMeta& meta) {
  std::string s = "# moepage-trace v1 layers=" + std::to_string(meta.layers) + " experts=" + std::to_string(meta.experts);
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

}  // namespace moepage::pager
