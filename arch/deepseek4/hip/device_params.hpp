// The model's dense weights and per-layer decode state in device memory. Matrices keep the
// checkpoint's encoding (cpu::MatRef whose data/scale point at device bytes: the GPU kernels
// decode FP8/FP4/BF16 on the fly exactly as the CPU ones do); small vectors are float arrays.
// Built once at load by upload_params() from the CPU ModelParams (device_params.cpp).
#pragma once
#include <cstdint>
#include <vector>

#include "deepseek4/cpu/matref.hpp"
#include "deepseek4/forward/params.hpp"
#include "deepseek4/hip/device_arena.hpp"
#include "deepseek4/hip/gemm_policy.hpp"
#include "deepseek4/model/config.hpp"

namespace moepage::ds4::gpu {

// cos/sin of every position a sequence may reach: [positions, half] each, device memory.
// Angles come from cpu::Rope::angles, so CPU and GPU rotate by bit-identical angles.
struct DeviceRope {
  const float* cos = nullptr;
  const float* sin = nullptr;
  int32_t half = 0;  // rope_dim / 2
  int64_t positions = 0;
};

struct GpuHcParams {
  cpu::MatRef fn;                // [(2+N)N, N*D] for a block site, [N, N*D] for the head
  const float* base = nullptr;   // [(2+N)N] or [N]
  const float* scale = nullptr;  // [3] or [1]
};

struct GpuCompressorParams {
  cpu::MatRef wkv, wgate;       // [width, D]
  const float* ape = nullptr;   // [ratio, width]
  const float* norm = nullptr;  // [dim]
  uint32_t ratio = 0, dim = 0, width = 0;
  bool overlap = false;
};

struct GpuLayerParams {
  AttnKind kind = AttnKind::Sliding;
  MlpKind mlp = MlpKind::Moe;
  GemmPolicy gemm;  // the model's: which of this layer's products take the matrix cores
  const DeviceRope* rope = nullptr;  // main for sliding layers, compress for CSA/HCA
  GpuHcParams hc_attn, hc_ffn;
  const float *attn_norm = nullptr, *ffn_norm = nullptr, *q_norm = nullptr, *kv_norm = nullptr, *sink = nullptr;
  cpu::MatRef wq_a, wq_b, wkv, wo_a, wo_b;
  GpuCompressorParams comp, index_comp;
  cpu::MatRef index_wq_b, index_weights_proj;
  cpu::MatRef gate;
  const float* gate_bias = nullptr;       // [E] (zeros when the checkpoint has none)
  const int32_t* tid2eid = nullptr;       // hash layers: [vocab, k], device
  const int32_t* tid2eid_host = nullptr;  // the same table in host memory (routing known before the step)
  cpu::MatRef shared_w1, shared_w2, shared_w3;
};

struct GpuModelParams {
  cpu::MatRef embed, head;
  const float* norm = nullptr;
  GemmPolicy gemm;  // the model's (ModelOptions::matrix_min_tokens), copied into every layer
  GpuHcParams hc_head;
  DeviceRope rope_main, rope_compress;
  std::vector<GpuLayerParams> layers;
  uint64_t device_bytes = 0;  // dense bytes placed on the device
};

// Copies every dense tensor of `p` (and rope tables for max_context positions) into `arena`.
// `p` (and the CPU memory its views point into) must outlive nothing: all bytes are copied,
// except tid2eid_host which points into p.layers[l].tid2eid (keep p alive).
GpuModelParams upload_params(const ModelParams& p, const Config& c, const cpu::Rope& rope_main,
                             const cpu::Rope& rope_compress, int64_t max_context, DeviceArena& arena);

// Decode state of one layer in device memory (the twin of forward/state.hpp). The counters stay
// on the host: the host always knows which position closes a window.
struct GpuCompressorState {
  float *kv = nullptr, *gate = nullptr;            // [ratio, width]
  float *prev_kv = nullptr, *prev_gate = nullptr;  // [ratio, dim] (overlap only)
  float* entries = nullptr;                        // [max_entries, dim]
  int64_t max_entries = 0;
  bool has_prev = false;
  int64_t n_entries = 0;
  void reset() {
    has_prev = false;
    n_entries = 0;
  }
};

struct GpuLayerState {
  float* ring = nullptr;          // [ring_size, head_dim]
  GpuCompressorState comp;        // CSA, HCA
  GpuCompressorState index_comp;  // CSA
  void reset() {
    comp.reset();
    index_comp.reset();
  }
};

// Sizes the state of one compressor in `arena` (zeros) for up to max_entries entries.
void init_compressor_state(const GpuCompressorParams& p, int64_t max_entries, DeviceArena& arena,
                           GpuCompressorState& s);

}  // namespace moepage::ds4::gpu
