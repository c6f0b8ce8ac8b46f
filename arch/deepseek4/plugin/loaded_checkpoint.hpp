// What the deepseek4 plugin holds after create(): the parsed config, the open checkpoint (dense
// tensors read into memory as stored, never dequantized), the dense weights bound as views, the
// expert catalog, and the hash-routing tables. Building it reads headers and the dense tensors
// (checking the small ones for NaN/Inf); it reads no expert bytes and allocates no forward state.
#pragma once
#include <cstdint>
#include <filesystem>
#include <memory>
#include <vector>

#include "checkpoint/checkpoint.hpp"
#include "deepseek4/forward/weights.hpp"
#include "deepseek4/model/catalog.hpp"
#include "deepseek4/model/config.hpp"
#include "deepseek4/model/tensor_names.hpp"

namespace moepage::ds4 {

struct LoadedCheckpoint {
  std::filesystem::path dir;
  Config config;
  // unique_ptr: the resolver and the weights point into the checkpoint, which must not move.
  std::unique_ptr<ckpt::Checkpoint> checkpoint;
  std::unique_ptr<TensorResolver> resolver;
  Weights weights;
  std::unique_ptr<ExpertCatalog> catalog;
  std::vector<std::string> ignored_config_keys;  // config.json keys the engine does not read
  uint64_t dense_bytes = 0;                      // bytes of the dense tensors (and scales) the forward pass reads
  uint64_t expert_bytes = 0;                     // every routed expert as stored in the files

  // Throws ckpt::CheckpointError / std::invalid_argument with a message naming the file or
  // tensor: config.json keys, missing tensors, shapes and dtypes that do not fit the config.
  static LoadedCheckpoint load(const std::filesystem::path& dir);
};

// Collects distinct expert ids into `out` in order of first use, O(1) per id: `seen` (grown to
// n_experts zeros) marks the ids collected, and the destructor clears those marks again, so the
// scratch is all zero between collections. Ids outside [0, n_experts) are skipped (the forward
// pass's own checks name them). A search of `out` per id cost 5 ms of host time before a
// 4,096-token prompt's first kernel on the H200 machine.
class DistinctExperts {
 public:
  DistinctExperts(std::vector<int32_t>& out, std::vector<uint8_t>& seen, uint32_t n_experts)
      : out_(out), seen_(seen), n_experts_(n_experts) {
    out_.clear();
    seen_.resize(n_experts, 0);
  }
  ~DistinctExperts() {
    for (const int32_t e : out_) seen_[size_t(e)] = 0;
  }
  DistinctExperts(const DistinctExperts&) = delete;
  DistinctExperts& operator=(const DistinctExperts&) = delete;

  void add(int64_t e) {
    if (e < 0 || e >= int64_t(n_experts_) || seen_[size_t(e)]) return;
    seen_[size_t(e)] = 1;
    out_.push_back(int32_t(e));
  }

 private:
  std::vector<int32_t>& out_;
  std::vector<uint8_t>& seen_;
  uint32_t n_experts_;
};

// Distinct experts the hash-routed `layer` uses for tokens[0..n), in order of first use
// (tid2eid rows), through DistinctExperts over `out` and `seen`. Empty for a layer routed by
// scores.
void hash_routed_experts(const LoadedCheckpoint& model, uint32_t layer, const int32_t* tokens, uint32_t n,
                         std::vector<int32_t>& out, std::vector<uint8_t>& seen);

}  // namespace moepage::ds4
