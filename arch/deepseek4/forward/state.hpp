// Decode state of one sequence, sized once at construction (nothing grows on the decode path).
//   ring        raw sliding-window KV; position p lives in slot p % ring_size. The ring holds
//               sliding_window + max_batch - 1 entries so a whole batch can be written before any
//               of its queries reads its window.
//   compressor  the open window's projected kv and gate (+ ape), slot p % ratio; with overlap
//               (CSA) also the Ca half of the last closed window; and every entry emitted so far.
#pragma once
#include <cstdint>
#include <vector>

namespace moepage::ds4 {

struct CompressorState {
  std::vector<float> kv, gate;            // [ratio, width]: the open window
  std::vector<float> prev_kv, prev_gate;  // [ratio, dim]: Ca of the last closed window (overlap)
  bool has_prev = false;
  std::vector<float> entries;  // [max_entries, dim]
  int64_t n_entries = 0;

  void reset() {
    has_prev = false;
    n_entries = 0;
  }
};

struct LayerState {
  std::vector<float> ring;     // [ring_size, head_dim]
  CompressorState comp;        // CSA, HCA
  CompressorState index_comp;  // CSA: the indexer's keys
  void reset() {
    comp.reset();
    index_comp.reset();
  }
};

}  // namespace moepage::ds4
