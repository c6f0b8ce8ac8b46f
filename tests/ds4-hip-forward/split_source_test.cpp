// The GPU MoE block over a split acquire (hits first, each pending expert launched after its
// await): logits bitwise equal to the resident source's, whatever the grouping and the band size,
// and a read that fails at acquire_finish fails the forward call. The splitting source below makes
// "pending" real: a pending expert's slot is a scratch slot poisoned with 0xFF bytes (NaN floats)
// whose true bytes are copied in on the compute stream only when acquire_await is called, so a
// kernel launched before its await would read the poison and change the logits.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "deepseek4/hip/device_arena.hpp"
#include "gpu_resident_source.hpp"
#include "tiny_gpu_run.hpp"

using namespace moepage;
using namespace moepage::ds4;
using namespace moepage::ds4::test;

namespace {

// Serves `band` experts per call; experts whose id is a multiple of `every` are pending (every = 1:
// all of them), their bytes landing in a scratch slot when awaited. Checks the protocol per layer:
// a layer's acquire is finished before its next starts, every pending expert is awaited before
// finish, and experts_launched comes before it. Acquires of different layers may be started
// together (a deferred finish); open_most() is the most that ever were.
class SplittingExpertSource final : public gpu::GpuExpertSource {
 public:
  SplittingExpertSource(Tiny& t, uint32_t band, uint32_t every, int32_t fail_layer = -1)
      : resident_(t.experts),
        band_(band),
        every_(every),
        fail_layer_(fail_layer),
        slot_bytes_(t.layout.slot_bytes),
        stride_((slot_bytes_ + 255) / 256 * 256),
        n_experts_(t.cfg.n_routed_experts),
        poison_(slot_bytes_, std::byte{0xFF}),
        started_(t.cfg.num_hidden_layers) {
    late_ = static_cast<std::byte*>(device_.take_bytes(uint64_t(n_experts_) * stride_));
    const uint64_t all = uint64_t(t.cfg.num_hidden_layers) * n_experts_ * slot_bytes_;
    host_copy_ = static_cast<std::byte*>(pinned_.take_bytes(all));
    for (uint32_t l = 0; l < t.cfg.num_hidden_layers; ++l)
      for (uint32_t e = 0; e < n_experts_; ++e) {
        std::memcpy(host_copy_ + (uint64_t(l) * n_experts_ + e) * slot_bytes_, t.host_experts->slot(l, e), slot_bytes_);
      }
  }

  void acquire(uint32_t layer, const int32_t* experts, uint32_t n, const std::byte** slots,
               gpu::Stream stream) override {
    resident_.acquire(layer, experts, n, slots, stream);
  }
  void acquire_start(uint32_t layer, const int32_t* experts, uint32_t n, const std::byte** slots, uint8_t* pending,
                     gpu::Stream stream) override {
    Started& a = started_.at(layer);
    if (a.active) throw std::logic_error("acquire_start of layer " + std::to_string(layer) + " while it is started");
    resident_.acquire(layer, experts, n, slots, stream);
    // Every kernel queued before may still read the scratch slots (another layer's pending
    // experts included): they are done before the slots are poisoned again.
    gpu::synchronize(stream);
    a.pending.assign(n, 0);
    a.awaited.assign(n, 0);
    a.expert.assign(experts, experts + n);
    for (uint32_t i = 0; i < n; ++i) {
      a.pending[i] = pending[i] = uint32_t(experts[i]) % every_ == 0 ? 1 : 0;
      if (!pending[i]) continue;
      slots[i] = late_ + uint64_t(i) * stride_;
      gpu::upload(late_ + uint64_t(i) * stride_, poison_.data(), slot_bytes_);
      ++pending_total_;
    }
    a.active = true;
    a.launched = false;
    open_most_ = std::max(open_most_, ++open_);
    ++starts_;
  }
  void acquire_await(uint32_t layer, uint32_t index, gpu::Stream stream) override {
    Started& a = started_.at(layer);
    if (!a.active || index >= a.expert.size() || !a.pending[index] || a.awaited[index])
      throw std::logic_error("acquire_await of layer " + std::to_string(layer) + " index " + std::to_string(index) +
                             ": not a pending expert of the started acquire");
    a.awaited[index] = 1;
    const uint64_t at = (uint64_t(layer) * n_experts_ + uint32_t(a.expert[index])) * slot_bytes_;
    gpu::upload_async(late_ + uint64_t(index) * stride_, host_copy_ + at, slot_bytes_, stream);
  }
  void experts_launched(uint32_t layer) override {
    Started& a = started_.at(layer);
    if (!a.active) throw std::logic_error("experts_launched of layer " + std::to_string(layer) + ": none started");
    a.launched = true;
  }
  void acquire_finish(uint32_t layer) override {
    Started& a = started_.at(layer);
    if (!a.active) throw std::logic_error("acquire_finish without a started acquire");
    a.active = false;
    --open_;
    for (size_t i = 0; i < a.expert.size(); ++i)
      if (a.pending[i] && !a.awaited[i])
        throw std::logic_error("layer " + std::to_string(layer) + ": a pending expert was never awaited");
    if (!a.launched) ++finished_unlaunched_;
    if (int32_t(layer) == fail_layer_)
      throw std::runtime_error("injected: layer " + std::to_string(layer) + " read failed");
  }
  uint32_t max_batch() const override { return band_; }

  uint64_t starts() const { return starts_; }
  uint64_t pending_total() const { return pending_total_; }
  uint32_t open() const { return open_; }
  uint32_t open_most() const { return open_most_; }
  // Finishes the forward pass made without experts_launched first (the normal path never does).
  uint64_t finished_unlaunched() const { return finished_unlaunched_; }

 private:
  struct Started {
    bool active = false, launched = false;
    std::vector<uint8_t> pending, awaited;
    std::vector<int32_t> expert;
  };
  GpuResidentExpertSource& resident_;
  uint32_t band_, every_;
  int32_t fail_layer_;
  uint64_t slot_bytes_, stride_;
  uint32_t n_experts_;
  std::vector<std::byte> poison_;
  std::vector<Started> started_;
  gpu::DeviceArena device_{gpu::DeviceArena::Kind::Device};
  gpu::DeviceArena pinned_{gpu::DeviceArena::Kind::Pinned};
  std::byte* late_ = nullptr;
  std::byte* host_copy_ = nullptr;
  uint32_t open_ = 0, open_most_ = 0;
  uint64_t starts_ = 0, pending_total_ = 0, finished_unlaunched_ = 0;
};

}  // namespace

TEST_CASE("GPU logits over a split acquire (hits first, pending experts as they land, any band) equal resident's") {
  // direct_hits (the default): the routers also build each layer's record on the device and send
  // the scored layers' ids through mapped memory; a layer whose experts all hit in one band launches
  // from the device's record. Without the deferral it is also checked off.
  Tiny t;
  const std::vector<std::vector<float>> reference = run(t, t.experts);
  const uint32_t E = t.cfg.n_routed_experts, k = t.cfg.num_experts_per_tok;
  struct Arm {
    const char* name;
    uint32_t band, every;
  };
  for (const std::pair<bool, bool>& options :
       {std::pair{true, true}, std::pair{false, true}, std::pair{false, false}}) {
    const bool defer = options.first, direct = options.second;
    for (const Arm arm :
         {Arm{"every third expert pending, one band", E, 3}, Arm{"every other pending, top-k bands", k, 2},
          Arm{"all pending, bands of top-k + 1", k + 1, 1}, Arm{"none pending, top-k bands", k, E + 1}}) {
      CAPTURE(arm.name);
      CAPTURE(defer);
      CAPTURE(direct);
      SplittingExpertSource split(t, arm.band, arm.every);
      MoeStats stats;
      const std::vector<std::vector<float>> got =
          run(t, split, true, true, false, false, PromptShared::Auto, defer, direct, &stats);
      // Off, no layer launches from the device's record; on, the arm with nothing pending and
      // bands of at least top-k (every decode step's layers all hit in one band) does.
      if (!direct) CHECK(stats.device_records == 0);
      if (direct && arm.every > E && arm.band >= k) CHECK(stats.device_records > 0);
      CHECK(split.starts() > 0);
      if (arm.every <= E) CHECK(split.pending_total() > 0);
      CHECK(bitwise_equal(got, reference));
      CHECK(split.open() == 0);  // every acquire finished by the end of each call
      CHECK(split.finished_unlaunched() == 0);
      // Deferred, a layer's acquire stays open while the next layers are acquired; else one at a time.
      if (defer) CHECK(split.open_most() == t.cfg.num_hidden_layers);
      else CHECK(split.open_most() == 1);
    }
  }
}

TEST_CASE("a read that fails at acquire_finish fails the GPU forward call, deferred or not") {
  Tiny t;
  const int32_t last_layer = int32_t(t.cfg.num_hidden_layers) - 1;  // every DeepSeek-V4 layer routes experts
  for (const bool defer : {true, false}) {
    CAPTURE(defer);
    // The first layer: deferred, its finish comes after every later layer's acquire, and the later
    // layers must still be finished (the source left with none open) when the call fails.
    for (const int32_t failing_layer : {0, last_layer}) {
      CAPTURE(failing_layer);
      SplittingExpertSource failing(t, t.cfg.n_routed_experts, 2, failing_layer);
      CHECK_THROWS_WITH(run(t, failing, true, true, false, false, PromptShared::Auto, defer),
                        doctest::Contains("read failed"));
      CHECK(failing.open() == 0);
    }
  }
}
