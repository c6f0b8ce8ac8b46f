#include "parallel/rank_pager.hpp"

#include <algorithm>
#include <cstring>

namespace moepage::parallel {

RankPagerRef::RankPagerRef(const mp_pager_ref& pager, const RankCatalog& catalog, const ExpertPartition& partition)
    : inner_(pager), catalog_(catalog), partition_(partition), ids_(partition.n_experts()) {
  const mp_pager_vtable* v = pager.vtable;
  std::memcpy(&vtable_, v, std::min<size_t>(v->struct_size, sizeof vtable_));
  vtable_.struct_size = uint32_t(std::min<size_t>(v->struct_size, sizeof vtable_));
  vtable_.create = nullptr;  // the architecture neither creates nor owns the pager
  vtable_.destroy = nullptr;
  // A rank's pager numbers its experts locally and holds only its share of each layer: the
  // architecture acquires through the mapping above, never by looking slots up on the device.
  vtable_.fixed_slots = nullptr;
  // Its predictor would score the model's experts, the ones it knows only by their local ids: a
  // rank's pager observes the hidden state itself.
  vtable_.linear_predictor = nullptr;
  vtable_.observe_scores = nullptr;
  // Its slots are found by local ids too: the architecture acquires every expert of a rank.
  vtable_.residency = nullptr;
  install_calls();
}

mp_status RankPagerRef::fail(mp_status s, std::string message) {
  error_ = std::move(message);
  own_error_ = true;
  return s;
}

bool RankPagerRef::to_local(uint32_t layer, const int32_t* experts, uint32_t n) {
  if (experts == nullptr || n > ids_.size() || layer >= partition_.n_layers()) {
    fail(MP_ERR_INVALID_ARG, "rank " + std::to_string(catalog_.rank()) + ": acquire of layer " + std::to_string(layer) +
                                 " with " + std::to_string(n) + " experts is out of range");
    return false;
  }
  for (uint32_t i = 0; i < n; ++i) {
    const int32_t local = catalog_.local(layer, experts[i]);
    if (local < 0) {
      const bool valid = experts[i] >= 0 && uint32_t(experts[i]) < partition_.n_experts();
      fail(MP_ERR_INVALID_ARG,
           "rank " + std::to_string(catalog_.rank()) + ": layer " + std::to_string(layer) + " expert " +
               std::to_string(experts[i]) +
               (valid ? " belongs to rank " + std::to_string(partition_.owner(layer, uint32_t(experts[i])))
                      : std::string(" is not an expert of the model")));
      return false;
    }
    ids_[i] = local;
  }
  return true;
}

uint32_t RankPagerRef::owned_hints(uint32_t layer, const int32_t* experts, uint32_t n) {
  uint32_t kept = 0;
  if (experts == nullptr || layer >= partition_.n_layers()) return 0;
  for (uint32_t i = 0; i < n && kept < ids_.size(); ++i)
    if (const int32_t local = catalog_.local(layer, experts[i]); local >= 0) ids_[kept++] = local;
  return kept;
}

// The pager's message names the rank's own expert ids: say which global experts they are.
mp_status RankPagerRef::named(mp_status s, uint32_t layer, const int32_t* experts, uint32_t n) {
  if (s == MP_OK) return s;
  std::string map;
  for (uint32_t i = 0; i < n; ++i)
    map += (i ? ", " : "") + std::to_string(ids_[i]) + " = " + std::to_string(experts[i]);
  return fail(s, std::string(inner_.vtable->last_error(inner_.self)) + " [rank " + std::to_string(catalog_.rank()) +
                     "'s pager numbers its experts of layer " + std::to_string(layer) + " locally: " + map + "]");
}

const mp_pager_ref& RankPagerRef::pass(void* self) {
  of(self).own_error_ = false;  // the pager's own call: its last_error is the one to read
  return of(self).inner_;
}

void RankPagerRef::on_event(void* ctx, const mp_trace_event* event) {
  RankPagerRef& r = of(ctx);
  if (r.trace_fn_ == nullptr || event == nullptr) return;
  mp_trace_event global{};
  mp_read_struct(&global, sizeof global, event, sizeof(uint32_t));
  global.struct_size = event->struct_size < sizeof global ? event->struct_size : uint32_t(sizeof global);
  if (global.layer < r.partition_.n_layers() && global.expert < r.catalog_.owned_per_layer())
    global.expert = uint32_t(r.catalog_.global(global.layer, global.expert));
  r.trace_fn_(r.trace_ctx_, &global);
}

// Each call the pager offers is forwarded with its own self; absent ones (null, or past its
// struct_size and so zero here) stay absent.
void RankPagerRef::install_calls() {
  vtable_.last_error = [](void* self) {
    RankPagerRef& r = of(self);
    return r.own_error_ ? r.error_.c_str() : r.inner_.vtable->last_error(r.inner_.self);
  };
  vtable_.begin_token = [](void* self, uint64_t token) {
    return pass(self).vtable->begin_token(of(self).inner_.self, token);
  };
  vtable_.acquire = [](void* self, uint32_t layer, const int32_t* experts, uint32_t n, mp_acquire_result* out) {
    RankPagerRef& r = of(self);
    if (!r.to_local(layer, experts, n)) return mp_status(MP_ERR_INVALID_ARG);
    r.own_error_ = false;
    return r.named(r.inner_.vtable->acquire(r.inner_.self, layer, r.ids_.data(), n, out), layer, experts, n);
  };
  if (vtable_.observe != nullptr)
    vtable_.observe = [](void* self, uint32_t layer, const float* hidden, uint32_t d_model, mp_stream stream) {
      return pass(self).vtable->observe(of(self).inner_.self, layer, hidden, d_model, stream);
    };
  if (vtable_.hint != nullptr)
    vtable_.hint = [](void* self, uint32_t layer, const int32_t* experts, uint32_t n) {
      RankPagerRef& r = of(self);
      const uint32_t kept = r.owned_hints(layer, experts, n);
      r.own_error_ = false;
      return kept == 0 ? mp_status(MP_OK) : r.inner_.vtable->hint(r.inner_.self, layer, r.ids_.data(), kept);
    };
  vtable_.stats = [](void* self, mp_pager_stats* out) { return pass(self).vtable->stats(of(self).inner_.self, out); };
  vtable_.layer_stats = [](void* self, uint32_t layer, mp_pager_layer_stats* out) {
    return pass(self).vtable->layer_stats(of(self).inner_.self, layer, out);
  };
  if (vtable_.set_trace != nullptr)
    vtable_.set_trace = [](void* self, mp_trace_fn fn, void* ctx) {
      RankPagerRef& r = of(self);
      r.trace_fn_ = fn;
      r.trace_ctx_ = ctx;
      return r.inner_.vtable->set_trace(r.inner_.self, fn != nullptr ? &on_event : nullptr,
                                        fn != nullptr ? self : nullptr);
    };
  if (mp_pager_splits_acquire(&vtable_)) {
    vtable_.acquire_start = [](void* self, uint32_t layer, const int32_t* experts, uint32_t n, mp_acquire_result* out) {
      RankPagerRef& r = of(self);
      if (!r.to_local(layer, experts, n)) return mp_status(MP_ERR_INVALID_ARG);
      r.own_error_ = false;
      return r.named(r.inner_.vtable->acquire_start(r.inner_.self, layer, r.ids_.data(), n, out), layer, experts, n);
    };
    vtable_.acquire_await = [](void* self, uint32_t layer, uint32_t index, mp_event* ready) {
      return pass(self).vtable->acquire_await(of(self).inner_.self, layer, index, ready);
    };
    vtable_.acquire_finish = [](void* self, uint32_t layer) {
      return pass(self).vtable->acquire_finish(of(self).inner_.self, layer);
    };
  }
}

}  // namespace moepage::parallel
