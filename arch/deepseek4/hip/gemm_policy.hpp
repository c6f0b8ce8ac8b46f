// Which weight products run on the matrix cores (plain C++: the model's params carry it).
#pragma once
#include <cstdint>

#include "deepseek4/forward/expert_precision.hpp"

namespace moepage::ds4::gpu {

class LibraryWeightCache;  // library_weight_cache.hpp

// Products over at least matrix_min_tokens tokens (0: none) take the matrix cores where the
// device and the weight's encoding allow (bf16 operands, float sums); the rest, and every product
// the matrix-core path cannot take, run on the CUDA cores in float. The routed experts have their
// own threshold, on the most tokens one expert serves: a short prompt's experts serve a few tokens
// each, where the CUDA-core expert tiles were 9x slower, while the dense projections of 2 or 4
// tokens were faster on the CUDA cores (bench/results/2026-12-04-short-prompts.md, H200).
struct GemmPolicy {
  int64_t matrix_min_tokens = 8;
  // x as two bf16 parts (about 2^-17 relative, the float product's accuracy for routing) rather
  // than one (2^-9, half the matrix instructions).
  bool split = true;
  // The routed experts' tiles (model's matrix_expert_precision; Bf16 wherever split is off).
  ExpertPrecision expert_precision = ExpertPrecision::Fp16;
  // The FP4 experts' fp16 tiles of a prompt stream their weights and token rows through shared
  // memory, several steps in flight (mma_tile_stream.hpp; same bits), rather than loading each
  // step into registers one step ahead (mma_tile.hpp).
  bool expert_stream = true;
  // Experts that serve one token each (decode) on the matrix cores too (mma_gemv_fp4.hpp for FP4
  // experts on fp16 operands, else mma_gemv.hpp). Off by default: the CUDA-core kernels were 1-3.3%
  // (FP4, H100) and 7-8% (split bf16, H200) faster in decode.
  bool single_token = false;
  // The routed experts: an expert serving at least this many tokens (0: none) puts the layer's
  // experts on the matrix cores.
  int64_t expert_min_tokens = 2;
  // Single-token BF16 products on the CUDA cores (decode, the output head): steps of rows whose
  // loads stay in flight in a ring of shared memory while the oldest is multiplied (2-4, NVIDIA;
  // row_gemv_staged.hpp), or 0: each step loaded into registers, then multiplied.
  int gemv_stages = 3;
  // Dense products over at least this many tokens (0: none) go to the vendor's BLAS where the
  // build has one (library_gemm.hpp: NVIDIA's cuBLAS), the weight dequantized to bf16 once per
  // product and x rounded into parts (split) once; the rest as above.
  int64_t library_min_tokens = 0;
  // Where the library path keeps its dequantized weights between products (owned by the model;
  // null: dequantized for every product).
  LibraryWeightCache* weight_cache = nullptr;
  // A prompt attended on the matrix cores writes its output as wo_a's bf16 parts where wo_a goes
  // to the library (split only), instead of floats that the library rounds into parts. Off: on the
  // H100 the parts' scattered stores cost the attention kernel what the split it removes took.
  bool attention_parts = false;
  bool matrix(int64_t n_tokens) const { return matrix_min_tokens > 0 && n_tokens >= matrix_min_tokens; }
  bool library(int64_t n_tokens) const { return library_min_tokens > 0 && n_tokens >= library_min_tokens; }
  bool expert_matrix(int64_t max_tokens) const { return expert_min_tokens > 0 && max_tokens >= expert_min_tokens; }
};

// For products whose outputs pick among candidates (the router's logits, the indexer's scores):
// one bf16 part would flip near ties, so they take the matrix cores only with x split in two
// (about 2^-17 relative, the float product's own accuracy), else the CUDA cores.
inline GemmPolicy selection_policy(const GemmPolicy& model) { return model.split ? model : GemmPolicy{0, true}; }

// Whether this build and device have a matrix-core path at all.
bool matrix_cores_available();

// Whether this build and device have the vendor BLAS path (GemmPolicy::library_min_tokens).
bool library_gemm_available();

}  // namespace moepage::ds4::gpu
