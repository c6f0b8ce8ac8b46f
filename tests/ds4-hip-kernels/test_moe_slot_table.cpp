// Slot lookups on the device (ModelOptions::slot_table, hip/slot_table.hpp): decode steps of a
// scored layer over a paged source in miniature. The router looks its experts up in the device
// table of what the source reports valid; the hits compute at once, a miss stalls the device until
// the host has acquired it. Every step must give the host path's bits (same source, same steps),
// the source must see the same hits and misses, a step whose experts all hit must not acquire at
// all, and a host that fails while the device waits must leave a device that finishes the step
// (no hang) and a next step that is right again.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "deepseek4/hip/event_set.hpp"
#include "deepseek4/hip/moe.hpp"
#include "deepseek4/hip/moe_scratch.hpp"
#include "deepseek4/hip/moe_slot_table.hpp"
#include "kernel_test_support.hpp"
#include "moe_test_support.hpp"

using namespace moepage;
using namespace moepage::ds4;
using namespace moepage::ds4::gpu::test;

namespace {

// n device slots per layer, least recently used evicted, filled from the host copy by copies on a
// stream of its own (the compute stream may be waiting on the device for them), reporting what it
// holds as its residency. Its split acquire returns with the misses' copies still queued (pending),
// as a pager's does, so a stall's reply must wait for them on the device. Counts what a pager
// would: hits, misses, and how it was asked; injects a slow or failing read where a test asks.
class LruDeviceSlots final : public gpu::GpuExpertSource {
 public:
  LruDeviceSlots(ResidentExpertSource& host, Device& d, uint32_t layers, uint32_t experts, uint32_t slots)
      : host_(host),
        experts_(experts),
        slots_(slots),
        slot_bytes_(host.layout().slot_bytes),
        copy_(gpu::create_stream()),
        landed_(layers * slots),
        in_flight_(size_t(layers) * slots, 0) {
    base_ = d.arena().take<std::byte>(slot_bytes_ * layers * slots);
    staging_ = d.pinned().take<std::byte>(slot_bytes_ * slots);  // one per slot: copies in flight at once
    slot_of_.assign(layers, std::vector<int32_t>(experts, -1));
    expert_of_.assign(layers, std::vector<int32_t>(slots, -1));
    used_at_.assign(layers, std::vector<uint64_t>(slots, 0));
    generation_.assign(layers, 0);
  }
  ~LruDeviceSlots() override { gpu::destroy_stream(copy_); }

  uint32_t max_batch() const override { return slots_; }
  bool allows_slot_lookup() const override { return true; }
  bool residency(uint32_t layer, const std::byte** out, uint32_t n, uint64_t& generation) override {
    generation = generation_[layer];
    if (!out) return true;
    REQUIRE(n == experts_);
    for (uint32_t e = 0; e < n; ++e) {
      const int32_t s = slot_of_[layer][e];
      out[e] = s >= 0 && !in_flight_[index(layer, s)] ? slot(layer, s) : nullptr;  // a read landing is not valid yet
    }
    return true;
  }
  // The host path: the compute stream is done with the slots before any is refilled.
  void acquire(uint32_t layer, const int32_t* experts, uint32_t n, const std::byte** slots, gpu::Stream s) override {
    std::vector<uint8_t> pending(n);
    acquire_start(layer, experts, n, slots, pending.data(), s);
    for (uint32_t i = 0; i < n; ++i)
      if (pending[i]) acquire_await(layer, i, s);
    acquire_finish(layer);
  }
  void acquire_start(uint32_t layer, const int32_t* experts, uint32_t n, const std::byte** slots, uint8_t* pending,
                     gpu::Stream s) override {
    ++started_acquires;
    if (read_delay.count() > 0) {  // a slow read; meanwhile, did the device go on?
      std::this_thread::sleep_for(read_delay);
      compute_done_during_delay = gpu::stream_idle(compute);
    }
    if (fail_next_start) {
      fail_next_start = false;
      throw std::runtime_error("injected read failure in layer " + std::to_string(layer));
    }
    gpu::synchronize(s);
    place(layer, experts, n, slots, pending);
  }
  void acquire_await(uint32_t /*layer*/, uint32_t i, gpu::Stream s) override {
    REQUIRE(i < awaited_slot_.size());
    REQUIRE(awaited_slot_[i] >= 0);
    landed_.device_wait(uint32_t(awaited_slot_[i]), s);
  }
  void acquire_finish(uint32_t layer) override {
    gpu::synchronize(copy_);
    std::fill(in_flight_.begin(), in_flight_.end(), uint8_t(0));
    if (fail_next_finish) {
      fail_next_finish = false;
      throw std::runtime_error("injected failure of a landed read in layer " + std::to_string(layer));
    }
  }
  void account_hits(uint32_t layer, const int32_t* experts, uint32_t n, const std::byte* const* expected) override {
    ++accounted_calls;
    for (uint32_t i = 0; i < n; ++i) {
      const int32_t s = slot_of_[layer][size_t(experts[i])];
      REQUIRE(s >= 0);
      CHECK(slot(layer, s) == expected[i]);
    }
    std::vector<const std::byte*> again(n);  // the same slots: every expert hits
    std::vector<uint8_t> pending(n);
    place(layer, experts, n, again.data(), pending.data());
    for (uint32_t i = 0; i < n; ++i) CHECK(pending[i] == 0);
  }

  uint64_t hits = 0, misses = 0;
  int started_acquires = 0, accounted_calls = 0;
  bool fail_next_start = false;             // acquire_start throws (the device still waits in the stall)
  bool fail_next_finish = false;            // acquire_finish throws (the reply was queued already)
  std::chrono::milliseconds read_delay{0};  // how long acquire_start sleeps first
  gpu::Stream compute = nullptr;            // the stream it then asks about
  bool compute_done_during_delay = false;

 private:
  size_t index(uint32_t layer, int32_t s) const { return size_t(layer) * slots_ + size_t(s); }
  std::byte* slot(uint32_t layer, int32_t s) const {
    return base_ + (uint64_t(layer) * slots_ + uint32_t(s)) * slot_bytes_;
  }
  // The request's hits touched first, then each miss into the least recently used slot not holding
  // an expert of the request, its copy queued (pending, landed_ recorded behind it).
  void place(uint32_t layer, const int32_t* experts, uint32_t n, const std::byte** slots, uint8_t* pending) {
    REQUIRE(n <= slots_);
    awaited_slot_.assign(n, -1);
    std::vector<int32_t>& where = slot_of_[layer];
    std::vector<uint8_t> mine(slots_, 0);
    for (uint32_t i = 0; i < n; ++i)
      if (where[size_t(experts[i])] >= 0) mine[size_t(where[size_t(experts[i])])] = 1;
    for (uint32_t i = 0; i < n; ++i) {
      const uint32_t e = uint32_t(experts[i]);
      pending[i] = 0;
      if (where[e] >= 0) {
        ++hits;
      } else {
        ++misses;
        int32_t victim = -1;
        for (uint32_t s = 0; s < slots_; ++s)
          if (!mine[s] && (victim < 0 || used_at_[layer][s] < used_at_[layer][size_t(victim)])) victim = int32_t(s);
        REQUIRE(victim >= 0);
        if (expert_of_[layer][size_t(victim)] >= 0) where[size_t(expert_of_[layer][size_t(victim)])] = -1;
        std::byte* from = staging_ + uint64_t(victim) * slot_bytes_;
        std::memcpy(from, host_.slot(layer, e), slot_bytes_);
        gpu::upload_async(slot(layer, victim), from, slot_bytes_, copy_);
        landed_.record(uint32_t(index(layer, victim)), copy_);
        in_flight_[index(layer, victim)] = 1;
        where[e] = victim;
        expert_of_[layer][size_t(victim)] = int32_t(e);
        mine[size_t(victim)] = 1;
        ++generation_[layer];
        pending[i] = 1;
        awaited_slot_[i] = int32_t(index(layer, victim));
      }
      used_at_[layer][size_t(where[e])] = ++clock_;
      slots[i] = slot(layer, where[e]);
    }
  }

  ResidentExpertSource& host_;
  uint32_t experts_, slots_;
  uint64_t slot_bytes_;
  gpu::Stream copy_;
  gpu::EventSet landed_;            // [layers * slots]: the last copy into each slot
  std::vector<uint8_t> in_flight_;  // [layers * slots]: a copy queued, not finished
  std::byte* base_ = nullptr;
  std::byte* staging_ = nullptr;
  std::vector<std::vector<int32_t>> slot_of_, expert_of_;
  std::vector<std::vector<uint64_t>> used_at_;
  std::vector<uint64_t> generation_;
  std::vector<int32_t> awaited_slot_;  // the last place(): each request's slot (flat index), or -1
  uint64_t clock_ = 0;
};

// One layer's decode steps, each run by moe() over one source and scratch, looked up or not.
struct Arm {
  LruDeviceSlots source;
  std::unique_ptr<gpu::MoeScratch> sc;
  MoeStats stats;
  Arm(ResidentExpertSource& host, Device& d, const Config& c, uint32_t slots, bool lookup,
      std::chrono::milliseconds reply_timeout = std::chrono::milliseconds(0))
      : source(host, d, c.num_hidden_layers, c.n_routed_experts, slots),
        sc(gpu::allocate_moe_scratch(c, 1, d.arena(), d.pinned())) {
    if (!lookup) return;
    sc->slot_stalls = std::make_unique<gpu::SlotStalls>(c.num_hidden_layers, c.num_experts_per_tok, c.n_routed_experts,
                                                        reply_timeout);
    sc->slot_lookup = true;
  }
  std::vector<float> step(const gpu::GpuLayerParams& lp, const Config& c, const int32_t* token, const int32_t* token_d,
                          const float* yn, const ExpertLayout& layout, float* out, Device& d) {
    gpu::moe(lp, c, 1, token, token_d, 1, yn, source, layout, *sc, out, stats, d.stream());
    gpu::serve_slot_stalls(*sc, source, stats, d.stream());
    return d.get(out, c.hidden_size);
  }
};

struct Bench {
  Rng rng{4242};
  Device dev;
  Config c = moe_config(ScoringFunc::SqrtSoftplus);
  MoeLayer layer{rng, dev, c, MlpKind::Moe};
  ExpertLayout layout = ExpertLayout::packed(c.hidden_size, c.moe_intermediate_size, Dtype::I8, Dtype::I8);
  ResidentExpertSource host{layout, c.num_hidden_layers, c.n_routed_experts};
  std::vector<const float*> yn;  // distinct token states: each routes to its own experts
  std::vector<int32_t> token = {7};
  const int32_t* token_d = nullptr;
  float* out = nullptr;
  explicit Bench(int states) {
    fill_experts(rng, host, c);
    for (int i = 0; i < states; ++i) yn.push_back(dev.put(rng.floats(c.hidden_size, -2.0f, 2.0f)));
    token_d = dev.put(token);
    out = dev.zeros<float>(c.hidden_size);
  }
  std::vector<float> step(Arm& arm, int state) {
    return arm.step(layer.dev, c, token.data(), token_d, yn[size_t(state)], layout, out, dev);
  }
};

bool identical_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// The error of a step that must fail (empty when it did not).
std::string failed_step(Bench& b, Arm& lookup, int state) {
  try {
    (void)b.step(lookup, state);
  } catch (const std::exception& e) {
    return e.what();
  }
  return {};
}

// After a failed step: its kernels finish (no stall left waiting), no stall timed out, and the next
// steps give the host path's bits again.
void check_recovers(Bench& b, Arm& lookup, Arm& host_path) {
  gpu::synchronize(b.dev.stream());
  CHECK(lookup.sc->slot_stalls->timeouts() == 0);
  lookup.sc->slot_stalls->clear_abort();
  CHECK(lookup.sc->stalls_queued.empty());
  for (const int s : {1, 2, 1, 3, 0}) {
    CAPTURE(s);
    CHECK(identical_bits(b.step(lookup, s), b.step(host_path, s)));
  }
}

}  // namespace

TEST_CASE("slot lookup: the host path's bits and the pager's hits, with no acquire where every expert hit") {
  Bench b(5);
  // Repeats (every expert hits), new states (misses, some evicting), and a state whose experts
  // were evicted meanwhile.
  const int states[] = {0, 1, 0, 1, 0, 2, 2, 3, 0, 1, 4, 4, 0};
  Arm host_path(b.host, b.dev, b.c, 8, false), lookup(b.host, b.dev, b.c, 8, true);
  for (const int s : states) {
    CAPTURE(s);
    CHECK(identical_bits(b.step(lookup, s), b.step(host_path, s)));
  }
  const uint64_t steps = std::size(states);
  CHECK(lookup.stats.slot_lookups == steps);
  CHECK(host_path.stats.slot_lookups == 0);
  CHECK(lookup.source.hits == host_path.source.hits);
  CHECK(lookup.source.misses == host_path.source.misses);
  CHECK(lookup.source.misses > 0);
  // Each step either stalled (and acquired) or hit everything (and was only accounted).
  CHECK(lookup.stats.slot_stalls == uint64_t(lookup.source.started_acquires));
  CHECK(uint64_t(lookup.source.started_acquires + lookup.source.accounted_calls) == steps);
  CHECK(lookup.source.accounted_calls >= 5);  // the repeats at least
  CHECK(lookup.stats.routed_experts == host_path.stats.routed_experts);
}

TEST_CASE("slot lookup: a host failing while the device waits fails the step, and the next step is right") {
  Bench b(4);
  Arm host_path(b.host, b.dev, b.c, 8, false), lookup(b.host, b.dev, b.c, 8, true);
  CHECK(identical_bits(b.step(lookup, 0), b.step(host_path, 0)));
  lookup.source.fail_next_start = true;
  // A new state: a miss, whose acquire fails before any reply; the stall gives up.
  CHECK(failed_step(b, lookup, 1).find("injected read failure in layer 1") != std::string::npos);
  CHECK(lookup.sc->slot_stalls->aborted());
  check_recovers(b, lookup, host_path);
}

TEST_CASE("slot lookup: a read that fails after its reply was queued fails the step, and the next step is right") {
  Bench b(4);
  Arm host_path(b.host, b.dev, b.c, 8, false), lookup(b.host, b.dev, b.c, 8, true);
  CHECK(identical_bits(b.step(lookup, 0), b.step(host_path, 0)));
  lookup.source.fail_next_finish = true;
  // A new state: a miss, whose read is reported failed once the reply had released the stall.
  CHECK(failed_step(b, lookup, 1).find("injected failure of a landed read in layer 1") != std::string::npos);
  check_recovers(b, lookup, host_path);
}

TEST_CASE("slot lookup: a reply past its deadline lets the device go, fails the step, and the next step is right") {
  using namespace std::chrono_literals;
  Bench b(4);
  Arm host_path(b.host, b.dev, b.c, 8, false), lookup(b.host, b.dev, b.c, 8, true, 50ms);
  CHECK(identical_bits(b.step(lookup, 0), b.step(host_path, 0)));
  lookup.source.read_delay = 1000ms;  // twenty deadlines
  lookup.source.compute = b.dev.stream();
  const std::string message = failed_step(b, lookup, 1);  // a new state: a miss, whose reply comes late
  CAPTURE(message);
  CHECK(message.find("layer 1") != std::string::npos);
  CHECK(message.find("slot_reply_timeout_ms (50)") != std::string::npos);
  // The watch let the stall go through host memory while the host still slept in its read.
  CHECK(lookup.source.compute_done_during_delay);
  CHECK(lookup.sc->slot_stalls->aborted());
  lookup.source.read_delay = 0ms;
  check_recovers(b, lookup, host_path);
  // A reply within its deadline (none above took long) never trips the watch.
  CHECK(lookup.sc->slot_stalls->end_reply_watch() == false);
}

TEST_CASE("slot lookup: a stall left queued by a partial serve is served later, not abandoned") {
  Bench b(3);
  Arm host_path(b.host, b.dev, b.c, 8, false), lookup(b.host, b.dev, b.c, 8, true);
  for (const int s : {0, 1, 2, 0}) {
    CAPTURE(s);
    const std::vector<float> want = b.step(host_path, s);
    gpu::moe(b.layer.dev, b.c, 1, b.token.data(), b.token_d, 1, b.yn[size_t(s)], lookup.source, b.layout, *lookup.sc,
             b.out, lookup.stats, b.dev.stream());
    REQUIRE(lookup.sc->stalls_queued.size() == 1);
    const uint32_t layer = lookup.sc->stalls_queued.front().layer;
    REQUIRE(layer > 0);
    // Through the layer before: nothing of this one is served, and nothing is given up.
    gpu::serve_slot_stalls(*lookup.sc, lookup.source, lookup.stats, b.dev.stream(), layer - 1);
    CHECK(lookup.sc->stalls_queued.size() == 1);
    CHECK_FALSE(lookup.sc->slot_stalls->aborted());
    gpu::serve_slot_stalls(*lookup.sc, lookup.source, lookup.stats, b.dev.stream(), layer);
    CHECK(lookup.sc->stalls_queued.empty());
    CHECK(identical_bits(b.dev.get(b.out, b.c.hidden_size), want));
  }
  CHECK(lookup.source.misses == host_path.source.misses);
}
