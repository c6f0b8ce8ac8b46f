#include "ablate/measurement.hpp"

#include <regex>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace moepage::ablate {
namespace {

using nlohmann::json;

const json* find_object_with(const json& j, const char* a, const char* b) {
  if (j.is_object()) {
    if (j.contains(a) && j.contains(b)) return &j;
    for (const auto& [k, v] : j.items()) {
      if (const json* found = find_object_with(v, a, b)) return found;
    }
  } else if (j.is_array()) {
    for (const auto& v : j) {
      if (const json* found = find_object_with(v, a, b)) return found;
    }
  }
  return nullptr;
}

std::optional<double> find_number(const json& j, const std::string& key) {
  if (j.is_object()) {
    if (auto it = j.find(key); it != j.end() && it->is_number()) return it->get<double>();
    for (const auto& [k, v] : j.items()) {
      if (auto found = find_number(v, key)) return found;
    }
  }
  return std::nullopt;
}

uint64_t count(const json& o, const char* key) {
  auto it = o.find(key);
  if (it == o.end() || !it->is_number()) return 0;
  return it->is_number_unsigned() || it->is_number_integer() ? it->get<uint64_t>() : uint64_t(it->get<double>());
}

}  // namespace

std::optional<double> Measurement::prefill_tok_s() const {
  if (prefill_seconds <= 0.0 || prompt_tokens == 0) return std::nullopt;
  return prompt_tokens / prefill_seconds;
}

std::optional<double> Measurement::decode_tok_s() const {
  // The first generated token comes out of the prefill's logits; decode forwards are the rest.
  if (decode_seconds <= 0.0 || generated < 2) return std::nullopt;
  return (generated - 1) / decode_seconds;
}

std::optional<double> Measurement::ms_per_token() const {
  if (auto t = decode_tok_s()) return 1000.0 / *t;
  return std::nullopt;
}

std::optional<double> Measurement::hit_rate() const {
  if (!pager || pager->accesses == 0) return std::nullopt;
  return double(pager->hits) / double(pager->accesses);
}

std::optional<double> Measurement::bytes_per_token() const {
  const uint32_t tokens = prompt_tokens + generated;
  if (!pager || tokens == 0) return std::nullopt;
  const uint64_t generating =
      pager->bytes_read > pager->load_bytes_read ? pager->bytes_read - pager->load_bytes_read : 0;
  return double(generating) / tokens;
}

std::optional<double> Measurement::expert_io_ms_per_token() const {
  const uint32_t tokens = prompt_tokens + generated;
  if (!pager || tokens == 0) return std::nullopt;
  const uint64_t ns = pager->resident ? pager->wait_ns : pager->read_ns + pager->wait_ns;
  return double(ns) / 1e6 / tokens;
}

std::vector<int32_t> parse_token_ids(const std::string& stdout_text, const std::string& where) {
  std::istringstream lines(stdout_text);
  std::string line, last;
  bool found = false;
  while (std::getline(lines, line)) {
    if (line.rfind("token ids:", 0) == 0) {
      last = line.substr(10);
      found = true;
    }
  }
  if (!found) throw std::runtime_error(where + ": no 'token ids:' line in the output of moepage run");
  std::vector<int32_t> ids;
  std::istringstream words(last);
  long long id;
  while (words >> id) ids.push_back(int32_t(id));
  if (!words.eof()) throw std::runtime_error(where + ": malformed 'token ids:' line");
  return ids;
}

bool parse_timing_line(const std::string& log_text, Measurement& m) {
  // The decode count in that line has meant both "tokens generated" and "decode forwards" over
  // time; the generated count comes from the ids instead, so only the times are taken here.
  static const std::regex pattern(
      R"(prefill ([0-9]+) tokens in ([0-9.eE+-]+) s[^;\n]*; decode [0-9]+ tokens in ([0-9.eE+-]+) s)");
  std::smatch match;
  bool found = false;
  auto begin = log_text.cbegin();
  while (std::regex_search(begin, log_text.cend(), match, pattern)) {
    m.prompt_tokens = uint32_t(std::stoul(match[1].str()));
    m.prefill_seconds = std::stod(match[2].str());
    m.decode_seconds = std::stod(match[3].str());
    found = true;
    begin = match.suffix().first;
  }
  return found;
}

void apply_stats_json(const std::string& json_text, const std::string& where, Measurement& m) {
  json doc;
  try {
    doc = json::parse(json_text);
  } catch (const json::exception& e) {
    throw std::runtime_error(where + ": not valid JSON: " + e.what());
  }
  // `moepage run` puts the totals under "pager" (per layer objects also hold hits and misses).
  const json* p = doc.is_object() && doc.contains("pager") && doc["pager"].is_object()
                      ? &doc["pager"]
                      : find_object_with(doc, "hits", "bytes_read");
  if (p != nullptr) {
    PagerCounters c;
    c.accesses = count(*p, "accesses");
    c.hits = count(*p, "hits");
    c.misses = count(*p, "misses");
    if (c.accesses == 0) c.accesses = c.hits + c.misses;
    c.bytes_read = count(*p, "bytes_read");
    c.load_bytes_read = count(*p, "load_bytes_read");
    c.read_ns = count(*p, "read_ns");
    c.wait_ns = count(*p, "wait_ns");
    c.prefetch_issued = count(*p, "prefetch_issued");
    c.prefetch_used = count(*p, "prefetch_used");
    c.prefetch_wasted = count(*p, "prefetch_wasted");
    c.slots_per_layer = uint32_t(count(*p, "slots_per_layer"));
    c.resident = count(*p, "resident") != 0 ||
                 (p->contains("resident") && (*p)["resident"].is_boolean() && (*p)["resident"].get<bool>());
    m.pager = c;
  }
  // `moepage run --stats-json` keeps the phase times at full precision under "run".
  if (auto v = find_number(doc, "prefill_seconds")) m.prefill_seconds = *v;
  if (auto v = find_number(doc, "decode_seconds")) m.decode_seconds = *v;
  if (auto v = find_number(doc, "prompt_tokens")) m.prompt_tokens = uint32_t(*v);
  if (auto v = find_number(doc, "generated_tokens")) m.generated = uint32_t(*v);
  if (auto v = find_number(doc, "load_seconds")) {
    m.load_seconds = *v;
    m.load_is_estimate = false;
  }
  if (auto v = find_number(doc, "routed_compute_seconds")) m.routed_compute_seconds = *v;
}

}  // namespace moepage::ablate
