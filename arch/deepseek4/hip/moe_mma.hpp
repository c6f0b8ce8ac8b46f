// The routed experts of a band on the matrix cores: for layers whose experts serve many tokens
// (prefill: mma_tile.hpp, or by default for FP4 experts on fp16 operands mma_tile_stream.hpp), per
// expert, its tokens gathered 64 (or 32) at a time against tiles of 128 rows of both its w1 and w3
// (SwiGLU formed in the registers), then 256-row tiles of its w2; for experts that each serve one
// token (decode: mma_gemv_fp4.hpp for FP4 on fp16 operands, else mma_gemv.hpp), 8 rows of w1 and
// w3 or 16 of w2 per warp (per block in mma_gemv.hpp) against that token.
// For .hip files only.
#pragma once
#include <cstddef>
#include <cstdint>

#include "deepseek4/hip/gemm_policy.hpp"
#include "deepseek4/hip/moe_band.hpp"
#include "deepseek4/hip/stream.hpp"

namespace moepage::ds4::gpu {

// Whether the experts' parts can take this path (encodings, shapes, alignment of slots and
// offsets, and a device with matrix cores this build uses).
bool expert_mma_applies(WeightCode up_code, WeightCode down_code, int64_t D, int64_t I, const PartArgs& w1,
                        const PartArgs& w3, const PartArgs& w2, bool slots_aligned);

// The token tile of a layer whose used experts serve `pairs` (token, expert) pairs in all: 32
// when they average 32 tokens or fewer (a 64-token tile would multiply mostly zeros), else 64.
// Chosen once per layer, like every kernel variant of the MoE block.
int32_t expert_token_tile(int64_t pairs, int64_t used_experts);

// Where the fp16 tiles (ExpertPrecision::Fp16) record the first FP4 block scale they cannot hold
// (past 2^13): expert_scale_fault_key(layer, expert) | the scale byte, into *record (0: none).
struct ExpertScaleFault {
  unsigned long long* record = nullptr;
  uint32_t layer = 0;
};
constexpr unsigned long long expert_scale_fault_key(uint32_t layer, uint32_t expert) {
  return (static_cast<unsigned long long>(layer) + 1) << 40 | static_cast<unsigned long long>(expert) << 8;
}

// act[pair, r] = swiglu(w1[r] . yn[token], w3[r] . yn[token]) and then ex_out[pair, :] = w2 act[pair]
// for every pair of experts first .. first + count of the band, whose largest group holds
// max_pairs pairs, in token tiles of token_tile (expert_token_tile), with the operands of
// `precision` (Fp16 where both codes are FP4, else SplitBf16 in its place).
void launch_expert_mma(const std::byte* const* table_row, WeightCode up_code, WeightCode down_code, const PartArgs& w1,
                       const PartArgs& w3, const PartArgs& w2, int64_t D, int64_t I, const Band& band, int32_t count,
                       int32_t max_pairs, int32_t token_tile, const float* yn, float limit, float* act, float* ex_out,
                       ExpertPrecision precision, const ExpertScaleFault& fault, Stream stream);

// The streamed fp16 tiles (moe_mma_stream.hip, mma_tile_stream.hpp): where both parts are FP4
// with block scales, rows of D and I columns suit the tile (stream_cols_ok), the parts are
// aligned (data 16 bytes, scales 4) and the device has the matrix cores this build uses.
bool expert_stream_applies(WeightCode up_code, WeightCode down_code, int64_t D, int64_t I, const PartArgs& w1,
                           const PartArgs& w3, const PartArgs& w2);

// x16 = the S token rows of yn (D columns, a multiple of 8; 16-byte aligned) rounded to fp16,
// each 8-column group in the tiles' k order: once per layer, before launch_expert_stream.
void launch_round_tokens_f16(const float* yn, int64_t S, int64_t D, uint16_t* x16, Stream stream);

// launch_expert_mma's products under ExpertPrecision::Fp16 for FP4 parts, where
// expert_stream_applies, the same bits: the tokens from x16 (launch_round_tokens_f16), the
// activations as fp16 in k order in act16 (S*k*I values), ex_out as there.
void launch_expert_stream(const std::byte* const* table_row, const PartArgs& w1, const PartArgs& w3, const PartArgs& w2,
                          int64_t D, int64_t I, const Band& band, int32_t count, int32_t max_pairs, int32_t token_tile,
                          const uint16_t* x16, float limit, uint16_t* act16, float* ex_out,
                          const ExpertScaleFault& fault, Stream stream);

// The same for a band whose experts each serve exactly one token (every decode step): the pair
// of expert b is band.starts()[b]. Applies where expert_mma_applies does. Where
// expert_fp4_single_applies, mma_gemv_fp4.hpp, reporting a scale past fp16's range in `fault`;
// the rest mma_gemv.hpp, x in two bf16 parts unless Bf16.
void launch_expert_mma_single(const std::byte* const* table_row, WeightCode up_code, WeightCode down_code,
                              const PartArgs& w1, const PartArgs& w3, const PartArgs& w2, int64_t D, int64_t I,
                              const Band& band, int32_t count, const float* yn, float limit, float* act, float* ex_out,
                              ExpertPrecision precision, const ExpertScaleFault& fault, Stream stream);
// Whether launch_expert_mma_single takes mma_gemv_fp4.hpp: fp16 operands, both parts FP4 with
// block scales, D and I multiples of 64 (and the token in 48 KiB of shared memory), the parts
// 16-byte aligned, and the device has the matrix cores.
bool expert_fp4_single_applies(ExpertPrecision precision, WeightCode up_code, WeightCode down_code, int64_t D,
                               int64_t I, const PartArgs& w1, const PartArgs& w3, const PartArgs& w2);

}  // namespace moepage::ds4::gpu
