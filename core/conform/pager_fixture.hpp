// What the pager checks share: a synthetic expert catalog over two generated files (the first
// layer has no experts; experts alternate between the files), a transport and a pager over it,
// and acquire-and-compare: slot contents are checked part by part against the file bytes each
// segment names.
#pragma once
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "conform/conformance.hpp"
#include "conform/sample_file.hpp"
#include "moepage/cpp/host_handles.hpp"

namespace moepage::conform {

inline constexpr uint32_t kLayers = 4;
inline constexpr uint32_t kLayerWithoutExperts = 0;  // like a model whose first layers are dense
inline constexpr uint32_t kExperts = 16;
inline constexpr uint32_t kTopK = 4;
inline constexpr uint64_t kPartBytes[] = {5000, 40, 3001};  // odd sizes: w1, its scale, w2
inline constexpr uint64_t kSlotAlign = 256;
inline constexpr uint64_t kPagerFileBytes = 600 * 1024;

// Owns everything an mp_expert_catalog points to.
class SyntheticCatalog {
 public:
  // `truncate_expert`: when >= 0, that expert of layer 1 gets a segment past the end of its file.
  SyntheticCatalog(const SampleFile& a, const SampleFile& b, int32_t truncate_expert = -1);
  const mp_expert_catalog* get() const { return &c_; }
  const mp_expert_segment& segment(uint32_t layer, uint32_t expert, uint32_t part) const {
    return segments_[(static_cast<size_t>(layer) * kExperts + expert) * part_bytes_.size() + part];
  }
  const SampleFile& sample(uint32_t file) const { return *samples_[file]; }
  const std::string& file(uint32_t index) const { return files_[index]; }

 private:
  std::vector<std::string> files_;
  std::vector<const SampleFile*> samples_;
  std::vector<const char*> file_ptrs_;
  std::vector<uint64_t> part_offset_, part_bytes_;
  std::vector<std::string> names_;
  std::vector<const char*> name_ptrs_;
  uint64_t expert_bytes_ = 0;
  std::vector<mp_expert_segment> segments_;
  std::vector<uint8_t> has_experts_, hash_routed_;
  mp_expert_catalog c_{};
};

// A transport and a pager over one catalog; the pager is destroyed first (it uses the transport).
struct Stack {
  mp::TransportHandle transport;
  mp::PagerHandle pager;
  ~Stack() { pager.reset(); }
};

struct PagerContext {
  const Component& pager;
  const Component& transport;
  const mp_host_api* host;
  const ConformConfig& config;
  const SampleFile& file_a;
  const SampleFile& file_b;
  const SyntheticCatalog& catalog;
  std::unique_ptr<Stack> stack;  // the instance most checks share
  std::mt19937_64 rng;
  uint64_t requested = 0;  // expert uses acquired through `stack` so far
  uint64_t token = 0;

  // A new transport and pager over `over` (default: the context's catalog). `through`, when
  // given, replaces the transport instance the pager reads through (it must outlive the pager).
  std::unique_ptr<Stack> make_stack(const SyntheticCatalog* over = nullptr,
                                    const mp_transport_ref* through = nullptr) const;
  // Acquires `experts` of `layer` on `p` as a token of its own (a pager may keep a token's
  // experts pinned until the next begin_token), waits for the ready event and checks every part
  // of every slot against `over`.
  // With `split` (ABI 1.5, a pager that offers it): acquire_start, acquire_await of every pending
  // expert (its event synchronised), acquire_finish, then the same comparison.
  void acquire_and_verify(mp::PagerHandle& p, uint32_t layer, const std::vector<int32_t>& experts,
                          const SyntheticCatalog* over = nullptr, bool split = false);
  // acquire_start of `experts` on `p` (no begin_token), then acquire_await of each pending one with
  // its event synchronised; slots receives the slots. The caller finishes.
  void start_and_await(mp::PagerHandle& p, uint32_t layer, const std::vector<int32_t>& experts,
                       std::vector<void*>& slots);
  // Every part of every slot of `experts` against `over` (default: the context's catalog).
  void verify_slots(uint32_t layer, const std::vector<int32_t>& experts, const std::vector<void*>& slots,
                    const SyntheticCatalog* over = nullptr);
  std::vector<int32_t> random_experts(uint32_t n);
  // Whether the pager under test offers the split acquire (ABI 1.5).
  bool offers_split() const { return mp_pager_splits_acquire(pager.descriptor->pager) != 0; }
};

// One pager check, as transport checks are (transport_fixture.hpp).
struct PagerCheck {
  const char* name;
  void (*run)(PagerContext& ctx);
  uint32_t since_minor = 0;
};

std::vector<PagerCheck> pager_checks();
std::vector<PagerCheck> pager_failure_checks();
std::vector<PagerCheck> pager_split_checks();
std::vector<PagerCheck> pager_fixed_slots_checks();
std::vector<PagerCheck> pager_residency_checks();

}  // namespace moepage::conform
