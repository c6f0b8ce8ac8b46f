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

// Distinct experts the hash-routed `layer` uses for tokens[0..n), in order of first use
// (tid2eid rows). Empty for a layer routed by scores. `out` is cleared first. `seen` is scratch
// (grown to n_routed_experts zeros, left all zero), so a prompt of n tokens costs O(n * top_k):
// a search of `out` per pair cost 5 ms of a 4,096-token prompt on the H200 host.
void hash_routed_experts(const LoadedCheckpoint& model, uint32_t layer, const int32_t* tokens, uint32_t n,
                         std::vector<int32_t>& out, std::vector<uint8_t>& seen);

}  // namespace moepage::ds4
