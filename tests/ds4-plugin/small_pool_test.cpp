// The arch against a pager with few slots: an in-process pager (a vtable in this test, no
// library) that holds only top_k slots per layer and refills them on every acquire. The arch must
// ask for at most that many experts per acquire, hint every hash-routed layer before its first
// acquire with the experts tid2eid gives the tokens (only the first band's when they are more than
// a band: the later bands would evict the rest unused; the forward pass stages that band as it
// reaches the layer), call begin_token once per forward with the position, and compute exactly
// what it computes over the resident pager.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <map>
#include <set>

#include "plugin_stack.hpp"
#include "support/test_paths.hpp"

namespace fs = std::filesystem;

namespace {

struct SmallPool {
  const mp_expert_catalog* cat = nullptr;
  uint32_t slots = 0;
  std::vector<std::vector<char>> pool;  // [slots] slot bytes, reused by every acquire
  uint32_t largest_request = 0;
  uint64_t acquires = 0;
  std::vector<uint64_t> tokens;                      // begin_token arguments
  std::map<uint32_t, std::set<int32_t>> hinted;      // layer -> experts hinted
  std::map<uint32_t, std::set<int32_t>> acquired;    // layer -> experts acquired
  std::map<uint32_t, std::set<int32_t>> first_band;  // layer -> experts of each step's first acquire
  std::set<uint32_t> acquired_this_step;             // layers that acquired since begin_token
  uint32_t largest_hint = 0;
  uint32_t late_hints = 0;     // hints for a layer that had already acquired in this step
  uint32_t between_hints = 0;  // hints given after another layer's acquire in this step
  std::string error;

  void fill(uint32_t layer, int32_t expert, char* slot) {
    for (uint32_t p = 0; p < cat->n_parts; ++p) {
      const mp_expert_segment& s =
          cat->segments[(size_t(layer) * cat->n_experts + uint32_t(expert)) * cat->n_parts + p];
      std::ifstream f(cat->files[s.file], std::ios::binary);
      f.seekg(std::streamoff(s.offset));
      f.read(slot + cat->part_offset[p], std::streamsize(s.length));
    }
  }
};

SmallPool* as(void* self) { return static_cast<SmallPool*>(self); }

mp_pager_vtable small_pool_vtable() {
  mp_pager_vtable v{};
  v.struct_size = sizeof v;
  v.last_error = [](void* self) -> const char* { return as(self)->error.c_str(); };
  v.begin_token = [](void* self, uint64_t token) -> mp_status {
    as(self)->tokens.push_back(token);
    as(self)->acquired_this_step.clear();
    return MP_OK;
  };
  v.acquire = [](void* self, uint32_t layer, const int32_t* experts, uint32_t n, mp_acquire_result* out) -> mp_status {
    SmallPool& p = *as(self);
    p.largest_request = std::max(p.largest_request, n);
    ++p.acquires;
    if (n > p.slots) {
      p.error = "more experts than slots";
      return MP_ERR_INVALID_ARG;
    }
    // Scribble over every slot first: stale bytes from an earlier band must never be read.
    for (auto& slot : p.pool) std::fill(slot.begin(), slot.end(), char(0x7f));
    if (p.acquired_this_step.insert(layer).second) p.first_band[layer].insert(experts, experts + n);
    for (uint32_t i = 0; i < n; ++i) {
      p.fill(layer, experts[i], p.pool[i].data());
      out->slots[i] = p.pool[i].data();
      p.acquired[layer].insert(experts[i]);
    }
    out->ready = nullptr;
    out->table_changed = 1;
    return MP_OK;
  };
  v.hint = [](void* self, uint32_t layer, const int32_t* experts, uint32_t n) -> mp_status {
    as(self)->hinted[layer].insert(experts, experts + n);
    if (as(self)->acquired_this_step.count(layer)) ++as(self)->late_hints;
    if (!as(self)->acquired_this_step.empty()) ++as(self)->between_hints;
    as(self)->largest_hint = std::max(as(self)->largest_hint, n);
    return MP_OK;
  };
  v.stats = [](void* self, mp_pager_stats* out) -> mp_status {
    *out = mp_pager_stats{};
    out->struct_size = sizeof *out;
    out->slots_per_layer = as(self)->slots;
    return MP_OK;
  };
  v.layer_stats = [](void*, uint32_t, mp_pager_layer_stats*) -> mp_status { return MP_ERR_UNSUPPORTED; };
  return v;
}

// What the small pool saw over a 12-token prompt given as 5 + 7 tokens, after checking the logits
// against the resident pager's and the bands and hints every arch option gives.
SmallPool run_small_pool(std::vector<std::pair<std::string, std::string>> arch_set) {
  const fs::path dir = moepage::test::fixture_path("hc4-mixed");
  const std::vector<int32_t> prompt{11, 200, 7, 7, 93, 150, 3, 64, 255, 18, 42, 5};

  moepage::test::PluginStack resident(dir, "resident", std::move(arch_set));
  const size_t V = resident.info.vocab_size;
  std::vector<float> want(prompt.size() * V);
  resident.arch.forward(prompt, want.data(), MP_FORWARD_ALL_LOGITS);

  // The same arch instance rebound to the small pool.
  SmallPool pool;
  pool.cat = resident.arch.expert_catalog();
  pool.slots = pool.cat->top_k;
  pool.pool.assign(pool.slots, std::vector<char>(pool.cat->expert_bytes));
  static const mp_pager_vtable vtable = small_pool_vtable();
  resident.arch.bind_pager(mp_pager_ref{sizeof(mp_pager_ref), &vtable, &pool});

  std::vector<float> got(prompt.size() * V);
  resident.arch.forward(std::span<const int32_t>(prompt.data(), 5), got.data(), MP_FORWARD_ALL_LOGITS);
  resident.arch.forward(std::span<const int32_t>(prompt.data() + 5, prompt.size() - 5), got.data() + 5 * V,
                        MP_FORWARD_ALL_LOGITS);
  CHECK(got == want);  // bands change nothing: same experts, same order, same arithmetic
  CHECK(pool.largest_request == pool.slots);
  CHECK(pool.acquires > pool.cat->n_layers * 2);  // a prefill needs several bands per layer
  CHECK(pool.tokens == std::vector<uint64_t>{0, 5});

  uint32_t hash_layers = 0;
  for (uint32_t l = 0; l < pool.cat->n_layers; ++l) {
    if (!pool.cat->hash_routed[l]) {
      CHECK(pool.hinted.count(l) == 0);
      continue;
    }
    ++hash_layers;
    // tid2eid fixes a hash layer's experts and the bands go in ascending ids: the hints are
    // exactly each step's first band.
    CHECK(pool.hinted[l] == pool.first_band[l]);
    CHECK(pool.hinted[l].size() < pool.acquired[l].size());
  }
  CHECK(hash_layers > 0);
  CHECK(pool.largest_hint == pool.slots);
  CHECK(pool.late_hints == 0);
  resident.arch.bind_pager(resident.pager.ref());  // do not leave the arch pointing at `pool`
  pool.cat = nullptr;
  return pool;
}

}  // namespace

TEST_CASE("a pager with top_k slots gets bands of at most top_k, hints for hash layers, and the resident logits") {
  // Each layer's first band is hinted as the forward pass reaches the layer: after the layers
  // before it acquired.
  const SmallPool pool = run_small_pool({});
  CHECK(pool.between_hints > 0);
}

TEST_CASE("prompt_staging: false hints the hash layers' first bands at the step's start only") {
  const SmallPool pool = run_small_pool({{"prompt_staging", "false"}});
  CHECK(pool.between_hints == 0);
}
