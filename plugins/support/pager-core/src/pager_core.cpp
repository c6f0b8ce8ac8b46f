#include "moepage/pager_core/pager_core.hpp"

#include <algorithm>
#include <string>

#include "moepage/pager_core/errors.hpp"

namespace moepage::pager {

bool Plan::hit(uint32_t i) const {
  for (uint32_t p = 0; p < n_pools; ++p)
    if (!part(i, p).hit) return false;
  return true;
}

LayerCounters& LayerCounters::operator+=(const LayerCounters& o) {
  accesses += o.accesses;
  hits += o.hits;
  misses += o.misses;
  prefetch_issued += o.prefetch_issued;
  prefetch_used += o.prefetch_used;
  prefetch_wasted += o.prefetch_wasted;
  prefetch_failed += o.prefetch_failed;
  fills_failed += o.fills_failed;
  table_changes += o.table_changes;
  return *this;
}

namespace {
std::string num(uint64_t v) { return std::to_string(v); }
}  // namespace

PagerCore::PagerCore(CoreGeometry geometry) : geo_(std::move(geometry)) {
  if (geo_.n_layers == 0 || geo_.n_experts == 0)
    throw PagerError(ErrorKind::InvalidRequest, "pager core: the model needs at least one layer and one expert");
  if (geo_.pools_per_layer != 1 && geo_.pools_per_layer != 2)
    throw PagerError(ErrorKind::InvalidRequest,
                     "pager core: pools_per_layer must be 1 or 2, got " + num(geo_.pools_per_layer));
  if (geo_.slots_per_layer == 0 || geo_.slots_per_layer > geo_.n_experts)
    throw PagerError(ErrorKind::InvalidRequest, "pager core: slots_per_layer must be in 1.." + num(geo_.n_experts) +
                                                    ", got " + num(geo_.slots_per_layer));
  if (geo_.paged.empty()) geo_.paged.assign(geo_.n_layers, 1);
  if (geo_.paged.size() != geo_.n_layers)
    throw PagerError(ErrorKind::InvalidRequest, "pager core: paged has " + num(geo_.paged.size()) +
                                                    " entries, expected one per layer (" + num(geo_.n_layers) + ")");
  if (!geo_.layer_slots.empty() && geo_.layer_slots.size() != geo_.n_layers)
    throw PagerError(ErrorKind::InvalidRequest, "pager core: layer_slots has " + num(geo_.layer_slots.size()) +
                                                    " entries, expected one per layer (" + num(geo_.n_layers) + ")");
  uint32_t max_slots = 0;
  for (uint32_t l = 0; l < geo_.n_layers; ++l) {
    if (!geo_.paged[l]) continue;
    const uint32_t s = slots(l);
    if (s == 0 || s > geo_.n_experts)
      throw PagerError(ErrorKind::InvalidRequest, "pager core: layer " + num(l) + ": slots must be in 1.." +
                                                      num(geo_.n_experts) + ", got " + num(s));
    max_slots = std::max(max_slots, s);
  }
  if (!geo_.in_catalog.empty() && geo_.in_catalog.size() != size_t(geo_.n_layers) * geo_.n_experts)
    throw PagerError(ErrorKind::InvalidRequest, "pager core: in_catalog has " + num(geo_.in_catalog.size()) +
                                                    " entries, expected layers x experts (" +
                                                    num(uint64_t(geo_.n_layers) * geo_.n_experts) + ")");
  if (!geo_.owned.empty() && geo_.owned.size() != geo_.n_experts)
    throw PagerError(ErrorKind::InvalidRequest, "pager core: owned has " + num(geo_.owned.size()) +
                                                    " entries, expected one per expert (" + num(geo_.n_experts) + ")");
  if (geo_.policy.kind == PolicyKind::Belady)
    throw PagerError(ErrorKind::InvalidRequest,
                     "pager core: policy 'belady' needs the future and exists only in `moepage simulate`");

  pool_index_.assign(geo_.n_layers, -1);
  size_t n_pools = 0;
  for (uint32_t l = 0; l < geo_.n_layers; ++l)
    if (geo_.paged[l]) n_pools += geo_.pools_per_layer;
  pools_.reserve(n_pools);
  for (uint32_t l = 0; l < geo_.n_layers; ++l) {
    if (!geo_.paged[l]) continue;
    pool_index_[l] = int32_t(pools_.size());
    for (uint32_t p = 0; p < geo_.pools_per_layer; ++p)
      pools_.emplace_back(l, p, geo_.pools_per_layer, slots(l), geo_.n_experts, geo_.policy);
  }
  reported_gen_.assign(geo_.n_layers, UINT64_MAX);  // no table uploaded yet
  table_changes_.assign(geo_.n_layers, 0);
  layer_accesses_.assign(geo_.n_layers, 0);
  layer_hits_.assign(geo_.n_layers, 0);
  layer_misses_.assign(geo_.n_layers, 0);
  // Scratch for the largest pool, so no layer's plan allocates.
  max_slots = std::max(max_slots, geo_.slots_per_layer);
  request_.assign(max_slots, -1);
  parts_.assign(size_t(max_slots) * geo_.pools_per_layer, SlotPlan{});
  seen_.assign(geo_.n_experts, 0);
}

uint32_t PagerCore::min_layer_slots() const {
  uint32_t least = geo_.slots_per_layer;
  for (uint32_t l = 0; l < geo_.n_layers; ++l)
    if (geo_.paged[l]) least = std::min(least, slots(l));
  return least;
}

const SlotPool& PagerCore::pool(uint32_t layer, uint32_t part) const {
  check_layer(layer);
  if (part >= geo_.pools_per_layer)
    throw PagerError(ErrorKind::InvalidRequest, "layer " + num(layer) + ": no pool " + num(part) + " (the layer has " +
                                                    num(geo_.pools_per_layer) + ")");
  return pools_[size_t(pool_index_[layer]) + part];
}

SlotPool& PagerCore::pool_mut(uint32_t layer, uint32_t part) { return pools_[size_t(pool_index_[layer]) + part]; }

void PagerCore::check_layer(uint32_t layer) const {
  if (layer >= geo_.n_layers)
    throw PagerError(ErrorKind::InvalidRequest,
                     "layer " + num(layer) + " is out of range (the model has " + num(geo_.n_layers) + " layers)");
  if (pool_index_[layer] < 0)
    throw PagerError(ErrorKind::InvalidRequest,
                     "layer " + num(layer) + " has no slot pool (its routed experts are not paged)");
}

void PagerCore::check_expert(uint32_t layer, int32_t expert) const {
  if (expert < 0 || uint32_t(expert) >= geo_.n_experts)
    throw PagerError(ErrorKind::InvalidRequest, "layer " + num(layer) + ": expert " + std::to_string(expert) +
                                                    " is out of range (the layer has " + num(geo_.n_experts) +
                                                    " experts)");
  const uint32_t e = uint32_t(expert);
  if (!geo_.in_catalog.empty() && !geo_.in_catalog[size_t(layer) * geo_.n_experts + e])
    throw PagerError(ErrorKind::InvalidRequest,
                     "layer " + num(layer) + ": expert " + num(e) + " is not in the expert catalog");
  if (!geo_.owned.empty() && !geo_.owned[e])
    throw PagerError(ErrorKind::NotOwned, "layer " + num(layer) + ": expert " + num(e) +
                                              " is not owned by this rank (expert parallelism); refusing to map it");
}

uint64_t PagerCore::layer_generation(uint32_t layer) const {
  uint64_t g = 0;
  for (uint32_t p = 0; p < geo_.pools_per_layer; ++p) g += pools_[size_t(pool_index_[layer]) + p].generation();
  return g;
}

void PagerCore::begin_token(uint64_t token) {
  token_ = token;
  for (auto& p : pools_) p.begin_token();
}

const Plan& PagerCore::plan(uint32_t layer, std::span<const int32_t> experts) {
  // Validate everything before the first mutation.
  check_layer(layer);
  if (experts.size() > slots(layer))
    throw PagerError(ErrorKind::InvalidRequest, "layer " + num(layer) + ": request of " + num(experts.size()) +
                                                    " experts exceeds the layer's " + num(slots(layer)) + " slots");
  for (int32_t e : experts) check_expert(layer, e);
  const uint32_t np = geo_.pools_per_layer;
  for (uint32_t p = 0; p < np; ++p) pool_mut(layer, p).check_demand(experts);

  const size_t n = experts.size();
  for (size_t i = 0; i < n; ++i) request_[i] = experts[i];
  const uint64_t fill = next_fill_++;
  // Parts are pool-major: pool p's plans for the request form one contiguous run.
  uint32_t misses = 0;
  SlotPlan* base = parts_.data();
  for (uint32_t p = 0; p < np; ++p) pool_mut(layer, p).demand(experts, fill, std::span<SlotPlan>(base + p * n, n));
  bool any_read = false;
  for (size_t i = 0; i < n; ++i) {
    bool hit = true;
    for (uint32_t p = 0; p < np; ++p) hit = hit && base[p * n + i].hit;
    if (!hit) {
      ++misses;
      any_read = true;
    }
  }
  layer_accesses_[layer] += n;
  layer_hits_[layer] += n - misses;
  layer_misses_[layer] += misses;

  const uint64_t gen = layer_generation(layer);
  plan_.layer = layer;
  plan_.n_pools = np;
  plan_.misses = misses;
  plan_.table_changed = gen != reported_gen_[layer];  // the first plan always uploads (sentinel)
  if (plan_.table_changed) ++table_changes_[layer];
  reported_gen_[layer] = gen;
  plan_.fill = any_read ? fill : 0;
  plan_.stride = uint32_t(n);
  plan_.experts = std::span<const int32_t>(request_.data(), n);
  plan_.parts = std::span<const SlotPlan>(parts_.data(), n * np);
  return plan_;
}

const Plan& PagerCore::prefetch(uint32_t layer, std::span<const int32_t> ranked) {
  check_layer(layer);
  const uint64_t stamp = ++seen_stamp_;
  for (int32_t e : ranked) {
    if (e < 0 || uint32_t(e) >= geo_.n_experts)
      throw PagerError(ErrorKind::InvalidRequest, "layer " + num(layer) + ": predicted expert " + std::to_string(e) +
                                                      " is out of range (the layer has " + num(geo_.n_experts) +
                                                      " experts)");
    if (seen_[uint32_t(e)] == stamp)
      throw PagerError(ErrorKind::InvalidRequest,
                       "layer " + num(layer) + ": predicted expert " + std::to_string(e) + " is listed twice");
    seen_[uint32_t(e)] = stamp;
  }
  const uint32_t np = geo_.pools_per_layer;
  const uint64_t fill = next_fill_++;
  size_t placed = 0;
  for (int32_t signed_e : ranked) {
    const uint32_t e = uint32_t(signed_e);
    if (!geo_.owned.empty() && !geo_.owned[e]) continue;
    if (!geo_.in_catalog.empty() && !geo_.in_catalog[size_t(layer) * geo_.n_experts + e]) continue;
    bool missing = false, room = true;
    for (uint32_t p = 0; p < np; ++p) {
      const SlotPool& pool = pools_[size_t(pool_index_[layer]) + p];
      if (pool.slot_of(e) >= 0) continue;
      missing = true;
      room = room && pool.can_prefetch();
    }
    if (!missing) continue;
    if (!room || placed == request_.size()) break;
    for (uint32_t p = 0; p < np; ++p) {
      SlotPool& pool = pool_mut(layer, p);
      SlotPlan& out = parts_[p * request_.size() + placed];
      const int32_t s = pool.slot_of(e);
      if (s >= 0) {
        out = SlotPlan{};
        out.slot = uint32_t(s);
        out.hit = true;
        out.pending = pool.state(uint32_t(s)) == SlotState::Filling;
        continue;
      }
      pool.prefetch(e, fill, out);  // can_prefetch() said a slot exists
    }
    request_[placed++] = signed_e;
  }
  plan_.layer = layer;
  plan_.n_pools = np;
  plan_.misses = uint32_t(placed);
  plan_.table_changed = false;  // reported by the layer's next plan()
  plan_.fill = placed ? fill : 0;
  plan_.stride = uint32_t(request_.size());
  plan_.experts = std::span<const int32_t>(request_.data(), placed);
  plan_.parts = std::span<const SlotPlan>(parts_.data(), parts_.size());
  return plan_;
}

void PagerCore::check_part(uint32_t layer, int32_t part) const {
  check_layer(layer);
  if (part >= int32_t(geo_.pools_per_layer) || part < -1)
    throw PagerError(ErrorKind::InvalidRequest, "layer " + num(layer) + ": no pool " + std::to_string(part) +
                                                    " (the layer has " + num(geo_.pools_per_layer) + ")");
}

uint32_t PagerCore::end_fill(uint32_t layer, uint64_t fill, int32_t part, uint32_t (SlotPool::*end)(uint64_t)) {
  check_part(layer, part);
  uint32_t n = 0;
  for (uint32_t p = 0; p < geo_.pools_per_layer; ++p)
    if (part < 0 || uint32_t(part) == p) n += (pool_mut(layer, p).*end)(fill);
  return n;
}

uint32_t PagerCore::commit_fill(uint32_t layer, uint64_t fill, int32_t part) {
  return end_fill(layer, fill, part, &SlotPool::commit_fill);
}

uint32_t PagerCore::invalidate_fill(uint32_t layer, uint64_t fill, int32_t part) {
  return end_fill(layer, fill, part, &SlotPool::invalidate_fill);
}

LayerCounters PagerCore::layer_counters(uint32_t layer) const {
  LayerCounters c;
  if (layer >= geo_.n_layers || pool_index_[layer] < 0) return c;
  c.accesses = layer_accesses_[layer];
  c.hits = layer_hits_[layer];
  c.misses = layer_misses_[layer];
  const PoolCounters& first = pools_[size_t(pool_index_[layer])].counters();
  c.prefetch_issued = first.prefetch_issued;
  c.prefetch_used = first.prefetch_used;
  c.prefetch_wasted = first.prefetch_wasted;
  c.prefetch_failed = first.prefetch_failed;
  for (uint32_t p = 0; p < geo_.pools_per_layer; ++p)
    c.fills_failed += pools_[size_t(pool_index_[layer]) + p].counters().fills_failed;
  c.table_changes = table_changes_[layer];
  return c;
}

LayerCounters PagerCore::total_counters() const {
  LayerCounters t;
  for (uint32_t l = 0; l < geo_.n_layers; ++l) t += layer_counters(l);
  return t;
}

}  // namespace moepage::pager
