// Decode routed on the device (moe.hip, for an expert source whose slots never move): the logits
// are bitwise those of the host-grouped path, the experts reported afterwards through account()
// are exactly those the host path acquires, step by step, and nothing is acquired while a decode
// step runs. A source that reports moving slots keeps the host path.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "gpu_resident_source.hpp"
#include "tiny_gpu_run.hpp"

using namespace moepage;
using namespace moepage::ds4;
using namespace moepage::ds4::test;

namespace {

// One access list: (layer, distinct experts ascending), in call order.
struct Access {
  uint32_t layer;
  std::vector<int32_t> experts;
  bool operator==(const Access&) const = default;
};

// The resident experts, recording every acquire and account; with `fixed`, it reports its slots as
// fixed (as the resident pager does through ABI 1.8).
class RecordingSource final : public gpu::GpuExpertSource {
 public:
  RecordingSource(GpuResidentExpertSource& resident, uint32_t n_experts, bool fixed)
      : resident_(resident), n_experts_(n_experts), fixed_(fixed) {}

  void acquire(uint32_t layer, const int32_t* experts, uint32_t n, const std::byte** slots,
               gpu::Stream stream) override {
    resident_.acquire(layer, experts, n, slots, stream);
    acquired_.push_back(sorted(layer, experts, n));
  }
  uint32_t max_batch() const override { return n_experts_; }
  bool fixed_slots(uint32_t layer, const std::byte** slots, uint32_t n) override {
    if (!fixed_) return false;
    if (n != n_experts_) throw std::logic_error("fixed_slots asked for " + std::to_string(n) + " slots");
    for (uint32_t e = 0; e < n; ++e) slots[e] = resident_.slot_at(layer, e);
    ++fixed_asked_;
    return true;
  }
  void account(uint32_t layer, const int32_t* experts, uint32_t n) override {
    if (!fixed_) throw std::logic_error("account() on a source whose slots move");
    for (uint32_t i = 1; i < n; ++i)
      if (experts[i - 1] >= experts[i]) throw std::logic_error("account(): experts not distinct and ascending");
    accounted_.push_back(sorted(layer, experts, n));
  }

  const std::vector<Access>& acquired() const { return acquired_; }
  const std::vector<Access>& accounted() const { return accounted_; }
  uint32_t fixed_asked() const { return fixed_asked_; }

 private:
  static Access sorted(uint32_t layer, const int32_t* experts, uint32_t n) {
    Access a{layer, std::vector<int32_t>(experts, experts + n)};
    std::sort(a.experts.begin(), a.experts.end());
    return a;
  }

  GpuResidentExpertSource& resident_;
  uint32_t n_experts_;
  bool fixed_;
  std::vector<Access> acquired_, accounted_;
  uint32_t fixed_asked_ = 0;
};

}  // namespace

TEST_CASE("decode routed on the device gives the host path's logits and reports the same experts") {
  Tiny t;
  const uint32_t E = t.cfg.n_routed_experts, L = t.cfg.num_hidden_layers;
  RecordingSource host_path(t.experts, E, false);
  const std::vector<std::vector<float>> reference = run(t, host_path);
  // The prompt's one batch, then one acquire per layer and decode step.
  REQUIRE(host_path.acquired().size() == size_t(L) * (1 + kSteps));
  CHECK(host_path.accounted().empty());

  RecordingSource fixed(t.experts, E, true);
  const std::vector<std::vector<float>> got = run(t, fixed);
  CHECK(bitwise_equal(got, reference));
  CHECK(fixed.fixed_asked() == L);  // once per layer, at its first decode step
  // The prompt (5 tokens) still acquires per layer; every decode step is reported afterwards.
  REQUIRE(fixed.acquired().size() == size_t(L));
  REQUIRE(fixed.accounted().size() == size_t(L) * kSteps);
  for (size_t i = 0; i < fixed.acquired().size(); ++i) CHECK(fixed.acquired()[i] == host_path.acquired()[i]);
  for (size_t i = 0; i < fixed.accounted().size(); ++i) {
    CAPTURE(i);
    CHECK(fixed.accounted()[i] == host_path.acquired()[L + i]);
  }

  // The model option off: the host path, with the same logits and no accounting.
  RecordingSource off(t.experts, E, true);
  CHECK(bitwise_equal(run(t, off, false), reference));
  CHECK(off.accounted().empty());
  CHECK(off.acquired().size() == host_path.acquired().size());
}
