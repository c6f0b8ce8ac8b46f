// HFADPT: a low-rank predictor of layer L+1's expert scores from layer L's hidden state.
//
//   offset 0   8 bytes  magic "HFADPT\0\0"
//          8   u32      version (1 or 2)
//         12   u32      n_entries
//         16   u32      d_model
//         20   u32      n_exp      (routed experts per layer)
//         24   u32      rank
//         28   n_entries x { u32 src_layer (predicts src_layer + 1),
//                            f16 A[rank][d_model], f16 B[n_exp][rank],
//                            v2 only: f32 bias[n_exp] }
// Little-endian throughout; the file is exactly 28 + n_entries x (4 + 2 rank d_model +
// 2 n_exp rank [+ 4 n_exp]) bytes. The scores are B (A h) [+ bias]: v2's per-entry bias is the
// intercept of the fit (tools/train/adapter_fit.py), which a low-rank map of h alone cannot hold. Every check names the
// file; a bad file is an error, never a crash (tests/fuzz-adapter fuzzes parse_adapter).
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace moepage::pager {

inline constexpr char kAdapterMagic[8] = {'H', 'F', 'A', 'D', 'P', 'T', '\0', '\0'};
inline constexpr uint32_t kAdapterVersion = 2;  // the newest version read and written
inline constexpr size_t kAdapterHeaderBytes = 28;

// What the adapter must agree with.
struct AdapterModel {
  uint32_t n_layers = 0;
  uint32_t d_model = 0;
  uint32_t n_experts = 0;
  std::vector<uint8_t> has_experts;  // [n_layers] 1: the layer has routed experts
};

struct AdapterEntry {
  uint32_t src_layer = 0;
  std::vector<uint16_t> a;  // f16 bits [rank][d_model]
  std::vector<uint16_t> b;  // f16 bits [n_exp][rank]
  std::vector<float> bias;  // [n_exp] in v2; empty in v1
};

struct Adapter {
  uint32_t version = 1;  // 2 when the entries carry a bias
  uint32_t d_model = 0;
  uint32_t n_experts = 0;
  uint32_t rank = 0;
  std::vector<AdapterEntry> entries;
};

// Validates magic, version, d_model, n_exp, rank (1..d_model), the entry count, the exact size,
// each entry's layer (src_layer + 1 in range and with routed experts, no layer twice) and that
// every weight is finite. Throws PagerError(ErrorKind::Format) naming `name`. Reads v1 and v2.
Adapter parse_adapter(std::span<const uint8_t> bytes, const AdapterModel& model, std::string_view name);
Adapter read_adapter_file(const std::string& path, const AdapterModel& model);

// Writes adapter.version (1: no biases; 2: every entry has n_exp of them).
std::vector<uint8_t> serialize_adapter(const Adapter& adapter);
void write_adapter_file(const std::string& path, const Adapter& adapter);

// A valid adapter with one entry per layer L whose next layer has routed experts, weights drawn
// from `seed` (the same seed gives the same bytes on every machine).
Adapter random_adapter(const AdapterModel& model, uint32_t rank, uint64_t seed);

}  // namespace moepage::pager
