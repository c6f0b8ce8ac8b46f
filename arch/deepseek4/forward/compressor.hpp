// The KV compressors of CSA and HCA layers (and the CSA indexer's own): token by token, fill the
// open window; when position p closes it ((p + 1) % ratio == 0) emit entry w = p / ratio:
//   per channel, a softmax over the window's slots of (gate + ape) weighs the projected kv;
//   with overlap the slots are the previous window's Ca half then this window's Cb half (the
//   previous half weighs 0 for w = 0); then the weighted RMSNorm, then RoPE at position w * ratio.
#pragma once
#include <cstdint>

#include "deepseek4/cpu/rope.hpp"
#include "deepseek4/forward/params.hpp"
#include "deepseek4/forward/state.hpp"

namespace moepage::ds4 {

// Size the state for up to max_entries emitted entries.
void init_compressor_state(const CompressorParams& p, int64_t max_entries, CompressorState& s);

// Feed one token at `position`: kv and gate are its projections (p.width floats each, gate
// without ape). Emits an entry when the token closes a window. `scratch` holds 2*p.dim +
// rope.rope_dim() floats.
void compressor_push(const CompressorParams& p, const cpu::Rope& rope, double eps, int64_t position, const float* kv,
                     const float* gate, CompressorState& s, float* scratch);

}  // namespace moepage::ds4
