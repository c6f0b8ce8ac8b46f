// moepage plugin SDK, pager side: an expert's parts in the order they lie in its slot. A pager that
// submits an expert's reads in this order makes the reads that continue each other in file and
// slot neighbours, which a transport may move as one (transports/mapped issues one copy per run).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace mp {

// Part indices 0..n_parts-1 sorted by part_offset (ties keep index order).
inline std::vector<uint32_t> parts_in_slot_order(const uint64_t* part_offset, uint32_t n_parts) {
  std::vector<uint32_t> order(n_parts);
  for (uint32_t p = 0; p < n_parts; ++p) order[p] = p;
  std::stable_sort(order.begin(), order.end(),
                   [part_offset](uint32_t a, uint32_t b) { return part_offset[a] < part_offset[b]; });
  return order;
}

}  // namespace mp
