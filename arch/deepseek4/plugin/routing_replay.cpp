#include "routing_replay.hpp"

#include <algorithm>
#include <stdexcept>

#include "moepage/pager_core/errors.hpp"
#include "moepage/pager_core/trace.hpp"

namespace moepage::ds4 {
namespace {

// Token values of a trace need not be contiguous: number them in order of appearance.
struct TokenIndex {
  uint64_t last = 0;
  uint64_t count = 0;
  uint64_t at(uint64_t token) {
    if (count == 0 || token != last) {
      last = token;
      ++count;
    }
    return count - 1;
  }
};

// Fills `ranked` for `cells` cells from (cell, expert) pairs given in cell order.
void build_ranked(const std::vector<std::pair<uint64_t, int32_t>>& pairs, uint64_t cells, std::vector<uint32_t>& start,
                  std::vector<int32_t>& values) {
  start.assign(cells + 1, 0);
  for (const auto& [cell, expert] : pairs) ++start[cell + 1];
  for (uint64_t i = 0; i < cells; ++i) start[i + 1] += start[i];
  values.resize(pairs.size());
  std::vector<uint32_t> fill(start.begin(), start.end() - 1);
  for (const auto& [cell, expert] : pairs) values[fill[cell]++] = expert;
}

}  // namespace

std::unique_ptr<RoutingReplay> RoutingReplay::load(const std::string& path, const Config& c) {
  pager::Trace trace;
  try {
    trace = pager::read_trace_file(path);
  } catch (const pager::PagerError& e) {
    throw std::runtime_error(std::string("routing_replay: ") + e.what());
  }
  const std::string where = "routing_replay " + path + ": ";
  const pager::TraceMeta& m = trace.meta;
  if (m.experts != c.n_routed_experts)
    throw std::runtime_error(where + "the trace has " + std::to_string(m.experts) + " experts per layer, the model " +
                             std::to_string(c.n_routed_experts));
  if (m.top_k != 0 && m.top_k != c.num_experts_per_tok)
    throw std::runtime_error(where + "the trace has top_k " + std::to_string(m.top_k) + ", the model " +
                             std::to_string(c.num_experts_per_tok));
  if (trace.rows.empty()) throw std::runtime_error(where + "the trace has no access rows");

  auto replay = std::unique_ptr<RoutingReplay>(new RoutingReplay());
  RoutingReplay& r = *replay;
  r.layers_ = m.layers;
  r.top_k_ = c.num_experts_per_tok;
  // Tokens are numbered over access, hint and predict rows together, in trace order.
  TokenIndex index;
  std::vector<uint64_t> row_token(trace.rows.size());
  std::vector<std::pair<uint64_t, int32_t>> hint_pairs, predict_pairs;
  size_t h = 0;
  for (size_t i = 0; i <= trace.rows.size(); ++i) {
    for (; h < trace.hints.size() && trace.hints[h].before_row == i; ++h) {
      const pager::TraceHint& hint = trace.hints[h];
      const uint64_t cell = index.at(hint.token) * r.layers_ + hint.layer;
      (hint.source == pager::HintSource::Arch ? hint_pairs : predict_pairs).emplace_back(cell, int32_t(hint.expert));
    }
    if (i < trace.rows.size()) row_token[i] = index.at(trace.rows[i].token);
  }
  r.tokens_ = index.count;
  const uint64_t cells = r.tokens_ * r.layers_;
  r.access_.assign(cells * r.top_k_, -1);
  std::vector<uint32_t> filled(cells, 0);
  for (size_t i = 0; i < trace.rows.size(); ++i) {
    const uint64_t cell = row_token[i] * r.layers_ + trace.rows[i].layer;
    if (filled[cell] == r.top_k_)
      throw std::runtime_error(where + "token " + std::to_string(trace.rows[i].token) + " layer " +
                               std::to_string(trace.rows[i].layer) +
                               " has more than top_k = " + std::to_string(r.top_k_) +
                               " experts; replay needs one token per step (a trace of single-token steps)");
    r.access_[cell * r.top_k_ + filled[cell]++] = int32_t(trace.rows[i].expert);
  }
  for (uint64_t cell = 0; cell < cells; ++cell)
    if (filled[cell] != r.top_k_)
      throw std::runtime_error(where + "trace token #" + std::to_string(cell / r.layers_) + " layer " +
                               std::to_string(cell % r.layers_) + " has " + std::to_string(filled[cell]) +
                               " experts; replay needs exactly top_k = " + std::to_string(r.top_k_) +
                               " for every token and layer");
  // Grouped by cell (stable: rank order kept); an expert named again in a later call of the same
  // cell is dropped, since the pager takes distinct experts.
  auto dedupe = [](std::vector<std::pair<uint64_t, int32_t>>& pairs) {
    std::stable_sort(pairs.begin(), pairs.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<std::pair<uint64_t, int32_t>> kept;
    kept.reserve(pairs.size());
    for (const auto& p : pairs) {
      bool seen = false;
      for (auto it = kept.rbegin(); it != kept.rend() && it->first == p.first; ++it)
        seen = seen || it->second == p.second;
      if (!seen) kept.push_back(p);
    }
    pairs.swap(kept);
  };
  dedupe(hint_pairs);
  dedupe(predict_pairs);
  build_ranked(hint_pairs, cells, r.hints_.start, r.hints_.values);
  build_ranked(predict_pairs, cells, r.predictions_.start, r.predictions_.values);
  return replay;
}

const int32_t* RoutingReplay::experts(uint32_t layer, uint64_t position) const {
  return access_.data() + cell(layer, position) * top_k_;
}

std::span<const int32_t> RoutingReplay::hints(uint32_t layer, uint64_t position) const {
  return hints_.cell(cell(layer, position));
}

std::span<const int32_t> RoutingReplay::predictions(uint32_t layer, uint64_t position) const {
  return predictions_.cell(cell(layer, position));
}

}  // namespace moepage::ds4
