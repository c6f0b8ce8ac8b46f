#include "cli/run_stats.hpp"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "moepage/pager_core/trace.hpp"

namespace moepage::cli {

TraceWriter::TraceWriter(const std::string& path, uint32_t layers, uint32_t experts, uint32_t top_k)
    : out_(path, "--trace"), file_(out_.stream()) {
  out_.write(moepage::pager::trace_header({layers, experts, top_k}) + "token,layer,expert,hit,prefetched\n");
}

void TraceWriter::write_hint(uint32_t layer, const int32_t* experts, uint32_t n) {
  for (uint32_t i = 0; i < n; ++i)
    if (experts[i] < 0) return;  // the pager accepted it, but no trace can hold it
  char buf[80];
  for (uint32_t i = 0; i < n; ++i) {
    const moepage::pager::TraceHint hint{token_, layer, uint32_t(experts[i]), i, 0};
    std::fwrite(buf, 1, moepage::pager::format_trace_hint(hint, buf), file_);
    ++rows_;
  }
}

mp_pager_ref TraceWriter::recording(const mp_pager_ref& pager) {
  inner_ = pager;
  const mp_pager_vtable* v = pager.vtable;
  vtable_ = mp_pager_vtable{};
  std::memcpy(&vtable_, v, std::min<size_t>(v->struct_size, sizeof vtable_));
  vtable_.struct_size = uint32_t(std::min<size_t>(v->struct_size, sizeof vtable_));
  vtable_.destroy = nullptr;  // the architecture never owns the pager
  // Each call the real pager offers is forwarded with its own self; absent ones (null, or past
  // its struct_size and so zero here) stay absent.
  if (vtable_.last_error != nullptr)
    vtable_.last_error = [](void* self) { return of(self).inner_.vtable->last_error(of(self).inner_.self); };
  if (vtable_.begin_token != nullptr)
    vtable_.begin_token = [](void* self, uint64_t token) {
      TraceWriter& w = of(self);
      w.token_ = token;
      return w.inner_.vtable->begin_token(w.inner_.self, token);
    };
  if (vtable_.acquire != nullptr)
    vtable_.acquire = [](void* self, uint32_t layer, const int32_t* experts, uint32_t n, mp_acquire_result* out) {
      return of(self).inner_.vtable->acquire(of(self).inner_.self, layer, experts, n, out);
    };
  if (vtable_.observe != nullptr)
    vtable_.observe = [](void* self, uint32_t layer, const float* hidden, uint32_t d_model, mp_stream stream) {
      return of(self).inner_.vtable->observe(of(self).inner_.self, layer, hidden, d_model, stream);
    };
  if (vtable_.hint != nullptr)
    vtable_.hint = [](void* self, uint32_t layer, const int32_t* experts, uint32_t n) {
      TraceWriter& w = of(self);
      const mp_status s = w.inner_.vtable->hint(w.inner_.self, layer, experts, n);
      if (s == MP_OK && experts != nullptr) w.write_hint(layer, experts, n);
      return s;
    };
  if (vtable_.stats != nullptr)
    vtable_.stats = [](void* self, mp_pager_stats* out) {
      return of(self).inner_.vtable->stats(of(self).inner_.self, out);
    };
  if (vtable_.layer_stats != nullptr)
    vtable_.layer_stats = [](void* self, uint32_t layer, mp_pager_layer_stats* out) {
      return of(self).inner_.vtable->layer_stats(of(self).inner_.self, layer, out);
    };
  if (vtable_.set_trace != nullptr)
    vtable_.set_trace = [](void* self, mp_trace_fn fn, void* ctx) {
      return of(self).inner_.vtable->set_trace(of(self).inner_.self, fn, ctx);
    };
  forward_later_calls();
  return mp_pager_ref{sizeof(mp_pager_ref), &vtable_, this};
}

// The calls of minors 1.5 and later: each is forwarded with the real pager's self, or left out
// (a copied pointer would be called with this writer as its self).
void TraceWriter::forward_later_calls() {
  if (mp_pager_splits_acquire(&vtable_)) {
    vtable_.acquire_start = [](void* self, uint32_t layer, const int32_t* experts, uint32_t n, mp_acquire_result* out) {
      return of(self).inner_.vtable->acquire_start(of(self).inner_.self, layer, experts, n, out);
    };
    vtable_.acquire_await = [](void* self, uint32_t layer, uint32_t index, mp_event* ready) {
      return of(self).inner_.vtable->acquire_await(of(self).inner_.self, layer, index, ready);
    };
    vtable_.acquire_finish = [](void* self, uint32_t layer) {
      return of(self).inner_.vtable->acquire_finish(of(self).inner_.self, layer);
    };
  } else if (MP_HAS_FIELD(&vtable_, mp_pager_vtable, acquire_finish)) {
    vtable_.acquire_start = nullptr;
    vtable_.acquire_await = nullptr;
    vtable_.acquire_finish = nullptr;
  }
  if (mp_pager_offers_fixed_slots(&vtable_))
    vtable_.fixed_slots = [](void* self, uint32_t layer, void** slots, uint32_t n) {
      return of(self).inner_.vtable->fixed_slots(of(self).inner_.self, layer, slots, n);
    };
  if (mp_pager_offers_linear_predictor(&vtable_)) {
    vtable_.linear_predictor = [](void* self, uint32_t layer, mp_linear_predictor* out) {
      return of(self).inner_.vtable->linear_predictor(of(self).inner_.self, layer, out);
    };
    vtable_.observe_scores = [](void* self, uint32_t layer, const float* scores, uint32_t n) {
      return of(self).inner_.vtable->observe_scores(of(self).inner_.self, layer, scores, n);
    };
  } else if (MP_HAS_FIELD(&vtable_, mp_pager_vtable, observe_scores)) {
    vtable_.linear_predictor = nullptr;
    vtable_.observe_scores = nullptr;
  }
  if (mp_pager_offers_residency(&vtable_))
    vtable_.residency = [](void* self, uint32_t layer, void** slots, uint32_t n, uint64_t* generation) {
      return of(self).inner_.vtable->residency(of(self).inner_.self, layer, slots, n, generation);
    };
}

void TraceWriter::on_event(void* ctx, const mp_trace_event* e) {
  auto* self = static_cast<TraceWriter*>(ctx);
  char buf[80];
  size_t n = 0;
  if (MP_HAS_FIELD(e, mp_trace_event, kind) && e->kind == MP_TRACE_PREDICTION) {
    moepage::pager::TraceHint proposal{e->token, e->layer, e->expert, 0, 0, moepage::pager::HintSource::Predictor};
    proposal.rank = MP_HAS_FIELD(e, mp_trace_event, rank) ? e->rank : 0;
    n = moepage::pager::format_trace_hint(proposal, buf);
  } else {
    const moepage::pager::TraceRow row{e->token, e->layer, e->expert, e->hit, e->prefetched};
    n = moepage::pager::format_trace_row(row, true, buf);
  }
  std::fwrite(buf, 1, n, self->file_);
  ++self->rows_;
}

std::string format_pager_stats(const mp_pager_stats& s) {
  const double rate = s.accesses ? 100.0 * double(s.hits) / double(s.accesses) : 0.0;
  std::string out = fmt::format(
      "expert accesses {}, hits {}, misses {}, hit rate {:.1f}%; read {:.1f} MiB ({:.1f} MiB at load); "
      "time reading {:.1f} ms, waiting {:.1f} ms, copying {:.1f} ms; {} slots per layer{}",
      s.accesses, s.hits, s.misses, rate, double(s.bytes_read) / (1 << 20), double(s.load_bytes_read) / (1 << 20),
      double(s.read_ns) / 1e6, double(s.wait_ns) / 1e6, double(s.copy_ns) / 1e6, s.slots_per_layer,
      s.resident ? " (resident)" : "");
  if (s.prefetch_issued > 0)
    out +=
        fmt::format("; prefetch issued {}, used {}, wasted {}", s.prefetch_issued, s.prefetch_used, s.prefetch_wasted);
  if (s.predictions > 0) out += fmt::format("; predictions {}, of them chosen {}", s.predictions, s.predictions_hit);
  return out;
}

mp_pager_stats merge_pager_stats(std::span<const mp_pager_stats> ranks) {
  mp_pager_stats m{};
  m.struct_size = sizeof m;
  m.resident = ranks.empty() ? 0 : 1;
  for (const mp_pager_stats& s : ranks) {
    m.accesses += s.accesses;
    m.hits += s.hits;
    m.misses += s.misses;
    m.bytes_read += s.bytes_read;
    m.read_ns += s.read_ns;
    m.wait_ns += s.wait_ns;
    m.copy_ns += s.copy_ns;
    m.prefetch_issued += s.prefetch_issued;
    m.prefetch_used += s.prefetch_used;
    m.prefetch_wasted += s.prefetch_wasted;
    m.table_uploads += s.table_uploads;
    m.slots_per_layer += s.slots_per_layer;
    m.resident = m.resident && s.resident;
    m.pool_bytes += s.pool_bytes;
    m.load_bytes_read += s.load_bytes_read;
    m.predictions += s.predictions;
    m.predictions_hit += s.predictions_hit;
  }
  return m;
}

namespace {

nlohmann::json pager_json(const mp_pager_stats& s) {
  return {{"accesses", s.accesses},
          {"hits", s.hits},
          {"misses", s.misses},
          {"hit_rate", s.accesses ? double(s.hits) / double(s.accesses) : 0.0},
          {"bytes_read", s.bytes_read},
          {"read_ns", s.read_ns},
          {"wait_ns", s.wait_ns},
          {"copy_ns", s.copy_ns},
          {"prefetch_issued", s.prefetch_issued},
          {"prefetch_used", s.prefetch_used},
          {"prefetch_wasted", s.prefetch_wasted},
          {"table_uploads", s.table_uploads},
          {"slots_per_layer", s.slots_per_layer},
          {"resident", s.resident != 0},
          {"pool_bytes", s.pool_bytes},
          {"load_bytes_read", s.load_bytes_read},
          {"predictions", s.predictions},
          {"predictions_hit", s.predictions_hit}};
}

nlohmann::json layers_json(const std::vector<mp_pager_layer_stats>& layers) {
  nlohmann::json out = nlohmann::json::array();
  for (size_t l = 0; l < layers.size(); ++l) {
    const mp_pager_layer_stats& ls = layers[l];
    out.push_back({{"layer", l},
                   {"accesses", ls.accesses},
                   {"hits", ls.hits},
                   {"misses", ls.misses},
                   {"hit_rate", ls.accesses ? double(ls.hits) / double(ls.accesses) : 0.0}});
  }
  return out;
}

std::vector<mp_pager_layer_stats> layer_stats_of(mp::PagerHandle& pager, uint32_t n_layers) {
  std::vector<mp_pager_layer_stats> out;
  for (uint32_t l = 0; l < n_layers; ++l) out.push_back(pager.layer_stats(l));
  return out;
}

}  // namespace

void write_stats_json(const std::string& path, std::span<mp::PagerHandle* const> pagers, uint32_t n_layers,
                      const RunTimes& times) {
  std::vector<mp_pager_stats> stats;
  std::vector<mp_pager_layer_stats> merged(n_layers, mp_pager_layer_stats{sizeof(mp_pager_layer_stats), 0, 0, 0});
  nlohmann::json ranks = nlohmann::json::array();
  for (size_t r = 0; r < pagers.size(); ++r) {
    stats.push_back(pagers[r]->stats());
    const std::vector<mp_pager_layer_stats> layers = layer_stats_of(*pagers[r], n_layers);
    for (uint32_t l = 0; l < n_layers; ++l) {
      merged[l].accesses += layers[l].accesses;
      merged[l].hits += layers[l].hits;
      merged[l].misses += layers[l].misses;
    }
    ranks.push_back({{"rank", r}, {"pager", pager_json(stats.back())}, {"layers", layers_json(layers)}});
  }
  nlohmann::json j;
  j["pager"] = pager_json(pagers.size() == 1 ? stats[0] : merge_pager_stats(stats));
  j["layers"] = layers_json(merged);
  if (pagers.size() > 1) j["ranks"] = std::move(ranks);
  j["run"] = {{"prompt_tokens", times.prompt_tokens},
              {"generated_tokens", times.generated_tokens},
              {"prefill_seconds", times.prefill_seconds},
              {"decode_seconds", times.decode_seconds},
              {"load_seconds", times.load_seconds}};
  if (times.routed_compute_seconds) j["run"]["routed_compute_seconds"] = *times.routed_compute_seconds;
  if (times.collective_calls > 0) {
    j["run"]["collective_calls"] = times.collective_calls;
    j["run"]["collective_seconds"] = times.collective_seconds;
  }
  if (times.slot_lookups > 0) {
    j["run"]["slot_lookups"] = times.slot_lookups;
    j["run"]["slot_stalls"] = times.slot_stalls;
  }
  output::write_file(path, j.dump(2) + "\n", "--stats-json");
}

}  // namespace moepage::cli
