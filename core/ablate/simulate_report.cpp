#include "ablate/simulate_report.hpp"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdio>
#include <exception>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "moepage/pager_core/split.hpp"

namespace moepage::ablate {
namespace {

using pager::PolicyKind;
using pager::PolicySpec;
using pager::SplitObjective;

uint64_t parse_unsigned(const std::string& text, const std::string& flag) {
  if (text.empty() || text.size() > 9 ||
      !std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isdigit(c); }))
    throw std::invalid_argument(flag + ": expected a whole number, got '" + text + "'");
  return std::stoull(text);
}

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> parts;
  std::string part;
  std::istringstream in(text);
  while (std::getline(in, part, sep)) parts.push_back(part);
  if (!text.empty() && text.back() == sep) parts.push_back("");
  return parts;
}

std::string pct(uint64_t misses, uint64_t accesses) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f%%", accesses ? 100.0 * double(misses) / double(accesses) : 0.0);
  return buf;
}

}  // namespace

std::vector<uint32_t> parse_slot_list(const std::string& text) {
  std::vector<uint32_t> slots;
  for (const std::string& part : split(text, ',')) {
    const uint64_t n = parse_unsigned(part, "--slots");
    if (n == 0) throw std::invalid_argument("--slots: a slot count must be at least 1");
    slots.push_back(uint32_t(n));
  }
  if (slots.empty()) throw std::invalid_argument("--slots: expected slot counts such as 8,16,32");
  return slots;
}

std::vector<PolicySpec> parse_policy_list(const std::string& text) {
  std::vector<PolicySpec> policies;
  for (std::string part : split(text, ',')) {
    // POLICY+split[:reads|misses]: the same total slots split per layer by the trace's reuse
    // (pager.split = trace), minimising the experts read (the default) or the misses.
    bool by_trace = false;
    SplitObjective objective = SplitObjective::Reads;
    if (const size_t plus = part.find("+split"); plus != std::string::npos) {
      size_t end = plus + 6;
      if (part.compare(end, 6, ":reads") == 0) {
        end += 6;
      } else if (part.compare(end, 7, ":misses") == 0) {
        objective = SplitObjective::Misses;
        end += 7;
      }
      if (end < part.size() && part[end] != '+')
        throw std::invalid_argument(
            "--policies: expected POLICY+split, POLICY+split:reads or POLICY+split:misses, got '" + part + "'");
      by_trace = true;
      part.erase(plus, end - plus);
    }
    // POLICY+prefetch[:M]: also prefetch the trace's predictions (M per proposal), as adapter-prefetch does.
    std::optional<uint32_t> predict_m;
    if (const size_t plus = part.find("+prefetch"); plus != std::string::npos) {
      const std::string rest = part.substr(plus + 9);
      if (!rest.empty() && rest[0] != ':')
        throw std::invalid_argument("--policies: expected POLICY+prefetch or POLICY+prefetch:M, got '" + part + "'");
      predict_m = rest.empty() ? 0u : uint32_t(parse_unsigned(rest.substr(1), "--policies prefetch count"));
      if (!rest.empty() && *predict_m == 0)
        throw std::invalid_argument("--policies: the prefetch count must be positive");
      part = part.substr(0, plus);
    }
    const size_t colon = part.find(':');
    const std::string name = part.substr(0, colon);
    const auto kind = pager::policy_from_name(name);
    if (!kind)
      throw std::invalid_argument("--policies: unknown policy '" + name +
                                  "' (expected lru, lfu, lfru, s3fifo, belady)");
    PolicySpec spec{*kind, 0.0};
    if (predict_m) {
      if (*kind == PolicyKind::Belady)
        throw std::invalid_argument("--policies: belady takes no +prefetch (it knows the future)");
      spec.prefetch_predictions = true;
      spec.predict_m = *predict_m;
    }
    if (colon != std::string::npos) {
      if (*kind != PolicyKind::Lfru) throw std::invalid_argument("--policies: only lfru takes a half-life (lfru:H)");
      spec.half_life = double(parse_unsigned(part.substr(colon + 1), "--policies lfru half-life"));
      if (spec.half_life <= 0) throw std::invalid_argument("--policies: the lfru half-life must be positive");
    }
    spec.split_by_trace = by_trace;
    spec.split_objective = objective;
    policies.push_back(spec);
  }
  if (policies.empty()) throw std::invalid_argument("--policies: expected names such as lru,lfu,lfru,belady");
  return policies;
}

std::pair<uint32_t, uint32_t> parse_layer_range(const std::string& text) {
  const size_t dash = text.find('-');
  if (dash == std::string::npos) {
    const uint32_t l = uint32_t(parse_unsigned(text, "--layers"));
    return {l, l};
  }
  const uint32_t a = uint32_t(parse_unsigned(text.substr(0, dash), "--layers"));
  const uint32_t b = uint32_t(parse_unsigned(text.substr(dash + 1), "--layers"));
  if (b < a) throw std::invalid_argument("--layers: the range " + text + " is empty (expected a-b with a <= b)");
  return {a, b};
}

std::string policy_label(const PolicySpec& p) {
  std::string name(pager::policy_name(p.kind));
  if (p.kind == PolicyKind::Lfru && p.half_life > 0) name += ":" + std::to_string(uint64_t(p.half_life));
  if (p.prefetch_predictions) name += "+prefetch" + (p.predict_m ? ":" + std::to_string(p.predict_m) : std::string());
  if (p.split_by_trace) name += p.split_objective == SplitObjective::Misses ? "+split:misses" : "+split";
  return name;
}

namespace {

// The accesses (and the hints, in their place before the same access) of layers first .. last.
pager::Trace select_layers(const pager::Trace& trace, uint32_t first, uint32_t last) {
  pager::Trace filtered;
  filtered.meta = trace.meta;
  filtered.has_outcomes = trace.has_outcomes;
  size_t next_hint = 0;
  auto keep_hints_before = [&](uint64_t row) {
    for (; next_hint < trace.hints.size() && trace.hints[next_hint].before_row <= row; ++next_hint) {
      pager::TraceHint h = trace.hints[next_hint];
      if (h.layer < first || h.layer > last) continue;
      h.before_row = filtered.rows.size();
      filtered.hints.push_back(h);
    }
  };
  for (size_t i = 0; i < trace.rows.size(); ++i) {
    keep_hints_before(i);
    const auto& r = trace.rows[i];
    if (r.layer >= first && r.layer <= last) filtered.rows.push_back(r);
  }
  keep_hints_before(UINT64_MAX);
  return filtered;
}

}  // namespace

SimulateReport run_simulation(const pager::Trace& trace, const SimulateRequest& request) {
  SimulateReport report;
  report.meta = trace.meta;
  report.slots_requested = request.slots;
  report.policies = request.policies;
  report.first_layer = 0;
  report.last_layer = trace.meta.layers ? trace.meta.layers - 1 : 0;
  if (const pager::Trace* st = request.split_trace;
      st && (st->meta.layers != trace.meta.layers || st->meta.experts != trace.meta.experts))
    throw std::invalid_argument("--split-trace: it has " + std::to_string(st->meta.layers) + " layers x " +
                                std::to_string(st->meta.experts) + " experts, the trace " +
                                std::to_string(trace.meta.layers) + " x " + std::to_string(trace.meta.experts));
  const pager::Trace* selected = &trace;
  const pager::Trace* split_source = request.split_trace;
  pager::Trace filtered, split_filtered;
  if (request.layers) {
    if (request.layers->second >= trace.meta.layers)
      throw std::invalid_argument("--layers: the trace has layers 0-" + std::to_string(trace.meta.layers - 1));
    report.first_layer = request.layers->first;
    report.last_layer = request.layers->second;
    filtered = select_layers(trace, report.first_layer, report.last_layer);
    selected = &filtered;
    if (split_source) {
      split_filtered = select_layers(*split_source, report.first_layer, report.last_layer);
      split_source = &split_filtered;
    }
  }
  report.rows = selected->rows.size();
  report.hint_rows = selected->hints.size();
  // Slots-major cells, spread over worker threads that take the next cell as they finish one.
  const size_t n_policies = request.policies.size(), n_cells = request.slots.size() * n_policies;
  report.cells.assign(n_cells, pager::SimResult{});
  const size_t hardware = std::max(1u, std::thread::hardware_concurrency());
  const size_t workers = std::max<size_t>(1, std::min<size_t>(request.threads ? request.threads : hardware, n_cells));
  std::atomic<size_t> next{0};
  std::vector<std::exception_ptr> errors(workers);
  auto work = [&](size_t w) {
    try {
      for (size_t i; (i = next.fetch_add(1)) < n_cells;)
        report.cells[i] =
            pager::simulate(*selected, request.slots[i / n_policies], request.policies[i % n_policies], split_source);
    } catch (...) {
      errors[w] = std::current_exception();
      next = n_cells;  // the others stop after their current cell
    }
  };
  std::vector<std::thread> pool;
  for (size_t w = 1; w < workers; ++w) pool.emplace_back(work, w);
  work(0);
  for (std::thread& t : pool) t.join();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
  if (selected->has_outcomes) report.recorded = pager::recorded_result(*selected);
  return report;
}

namespace {

// Miss rate per policy at every slot count, and each policy's misses as a multiple of belady's.
void write_miss_table(std::ostringstream& out, const SimulateReport& r) {
  const size_t np = r.policies.size();
  const auto belady = std::find_if(r.policies.begin(), r.policies.end(),
                                   [](const PolicySpec& p) { return p.kind == PolicyKind::Belady; });
  const bool has_belady = belady != r.policies.end();
  out << "| slots |";
  for (const auto& p : r.policies) out << " " << policy_label(p) << " |";
  if (has_belady) {
    for (const auto& p : r.policies) {
      if (p.kind != PolicyKind::Belady) out << " " << policy_label(p) << "/belady |";
    }
  }
  out << "\n|---:|";
  for (size_t i = 0; i < np; ++i) out << "---:|";
  if (has_belady) {
    for (const auto& p : r.policies)
      if (p.kind != PolicyKind::Belady) out << "---:|";
  }
  out << "\n";
  const size_t bi = size_t(belady - r.policies.begin());
  for (size_t s = 0; s < r.slots_requested.size(); ++s) {
    const pager::SimResult* row = &r.cells[s * np];
    out << "| " << row[0].slots << (row[0].slots != r.slots_requested[s] ? " (capped)" : "") << " |";
    for (size_t p = 0; p < np; ++p) out << " " << pct(row[p].misses, row[p].accesses) << " |";
    if (has_belady) {
      for (size_t p = 0; p < np; ++p) {
        if (r.policies[p].kind == PolicyKind::Belady) continue;  // as in the header
        char buf[32];
        if (row[bi].misses) std::snprintf(buf, sizeof buf, "%.2fx", double(row[p].misses) / double(row[bi].misses));
        else std::snprintf(buf, sizeof buf, "%s", row[p].misses ? "inf" : "1.00x");
        out << " " << buf << " |";
      }
    }
    out << "\n";
  }
}

// Reads, prefetches included, and the share of lru's excess misses over belady each policy removes.
void write_reads_table(std::ostringstream& out, const SimulateReport& r) {
  const size_t np = r.policies.size();
  const auto belady = std::find_if(r.policies.begin(), r.policies.end(),
                                   [](const PolicySpec& p) { return p.kind == PolicyKind::Belady; });
  const bool has_belady = belady != r.policies.end();
  const size_t bi = size_t(belady - r.policies.begin());
  const auto lru = std::find_if(r.policies.begin(), r.policies.end(), [](const PolicySpec& p) {
    return p.kind == PolicyKind::Lru && !p.prefetch_predictions;
  });
  out << "\nexpert reads per access (misses + prefetch reads)"
      << (has_belady && lru != r.policies.end() ? "; gap closed = (lru - policy) / (lru - belady) misses" : "")
      << "\n\n| slots |";
  for (const auto& p : r.policies) out << " " << policy_label(p) << " |";
  out << "\n|---:|";
  for (size_t i = 0; i < np; ++i) out << "---:|";
  out << "\n";
  for (size_t s = 0; s < r.slots_requested.size(); ++s) {
    const pager::SimResult* row = &r.cells[s * np];
    out << "| " << row[0].slots << " |";
    for (size_t p = 0; p < np; ++p) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.3f", row[p].reads_per_access());
      out << " " << buf;
      if (has_belady && lru != r.policies.end() && p != bi && r.policies[p].kind != PolicyKind::Belady) {
        const pager::SimResult& l = row[size_t(lru - r.policies.begin())];
        const double gap = double(l.misses) - double(row[bi].misses);
        if (gap > 0) {
          std::snprintf(buf, sizeof buf, " (gap %.0f%%)", 100.0 * (double(l.misses) - double(row[p].misses)) / gap);
          out << buf;
        }
      }
      out << " |";
    }
    out << "\n";
  }
}

// Where a split put the slots (the same total as the uniform count x layers).
void write_splits(std::ostringstream& out, const SimulateReport& r) {
  bool any_split = false;
  for (const pager::SimResult& c : r.cells) {
    if (!c.policy.split_by_trace) continue;
    if (!any_split)
      out << "\nslots per layer of each split (layers " << r.first_layer << "-" << r.last_layer << ")\n\n";
    any_split = true;
    std::vector<uint32_t> shown(c.layer_slots.begin() + r.first_layer,
                                c.layer_slots.begin() + std::min<size_t>(r.last_layer + 1, c.layer_slots.size()));
    out << "- " << policy_label(c.policy) << " at " << c.slots << ": " << pager::format_layer_slots(shown) << "\n";
  }
}

void write_per_layer(std::ostringstream& out, const SimulateReport& r) {
  const size_t np = r.policies.size();
  for (size_t s = 0; s < r.slots_requested.size(); ++s) {
    const pager::SimResult* row = &r.cells[s * np];
    out << "\nper layer, " << row[0].slots << " slots\n\n| layer |";
    for (const auto& p : r.policies) out << " " << policy_label(p) << " |";
    out << "\n|---:|";
    for (size_t i = 0; i < np; ++i) out << "---:|";
    out << "\n";
    for (uint32_t l = r.first_layer; l <= r.last_layer && l < r.meta.layers; ++l) {
      out << "| " << l << " |";
      for (size_t p = 0; p < np; ++p) out << " " << pct(row[p].layers[l].misses, row[p].layers[l].accesses) << " |";
      out << "\n";
    }
  }
}

}  // namespace

std::string simulate_table(const SimulateReport& r, bool per_layer) {
  std::ostringstream out;
  out << "trace: " << r.meta.layers << " layers, " << r.meta.experts << " experts"
      << (r.meta.top_k ? ", top-" + std::to_string(r.meta.top_k) : "") << "; layers " << r.first_layer << "-"
      << r.last_layer << ", " << r.rows << " accesses";
  if (r.hint_rows > 0)
    out << ", " << r.hint_rows << " hinted experts (replayed: lru/lfu/lfru prefetch them as the live pager did, "
        << "belady takes them as free loads)";
  out << "\nmiss rate per policy (slots = per layer; belady is the optimal floor)\n\n";
  write_miss_table(out, r);
  write_reads_table(out, r);
  write_splits(out, r);
  if (r.recorded) {
    out << "\nrecorded by the live pager: " << pct(r.recorded->misses, r.recorded->accesses) << " misses ("
        << r.recorded->misses << " of " << r.recorded->accesses << ")\n";
  }
  if (per_layer) write_per_layer(out, r);
  return out.str();
}

std::string simulate_json(const SimulateReport& r, const std::string& trace_name, const std::string& split_trace_name) {
  nlohmann::json doc;
  doc["trace"] = trace_name;
  // The trace POLICY+split divided the slots by: TRACE itself (null, in-sample) or another.
  doc["split_trace"] = split_trace_name.empty() ? nlohmann::json(nullptr) : nlohmann::json(split_trace_name);
  doc["layers"] = r.meta.layers;
  doc["experts"] = r.meta.experts;
  doc["top_k"] = r.meta.top_k;
  doc["layer_range"] = {r.first_layer, r.last_layer};
  doc["accesses"] = r.rows;
  doc["hinted_experts"] = r.hint_rows;
  doc["results"] = nlohmann::json::array();
  for (const pager::SimResult& c : r.cells) {
    nlohmann::json layers = nlohmann::json::array();
    for (uint32_t l = r.first_layer; l <= r.last_layer && l < c.layers.size(); ++l) {
      layers.push_back({{"layer", l},
                        {"accesses", c.layers[l].accesses},
                        {"misses", c.layers[l].misses},
                        {"prefetch_reads", c.layers[l].prefetch_reads}});
    }
    doc["results"].push_back({{"policy", policy_label(c.policy)},
                              {"slots", c.slots},
                              {"layer_slots", c.layer_slots},
                              {"accesses", c.accesses},
                              {"misses", c.misses},
                              {"miss_rate", c.miss_rate()},
                              {"prefetch_reads", c.prefetch_reads},
                              {"reads_per_access", c.reads_per_access()},
                              {"layers", std::move(layers)}});
  }
  if (r.recorded) {
    doc["recorded"] = {
        {"accesses", r.recorded->accesses}, {"misses", r.recorded->misses}, {"miss_rate", r.recorded->miss_rate()}};
  }
  return doc.dump(2) + "\n";
}

}  // namespace moepage::ablate
