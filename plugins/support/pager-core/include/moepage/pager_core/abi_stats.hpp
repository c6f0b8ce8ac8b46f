// Copies the core's counters into the ABI's statistics structs. Only the fields the core knows
// are written (accesses, hits, misses, prefetch counts, table uploads, slots); the plugin adds
// bytes and times from its transport.
#pragma once
#include "moepage/pager.h"
#include "moepage/pager_core/pager_core.hpp"

namespace moepage::pager {

inline void fill_abi_stats(const PagerCore& core, mp_pager_stats& out) {
  const LayerCounters t = core.total_counters();
  out.struct_size = sizeof(mp_pager_stats);
  out.accesses = t.accesses;
  out.hits = t.hits;
  out.misses = t.misses;
  out.prefetch_issued = t.prefetch_issued;
  out.prefetch_used = t.prefetch_used;
  out.prefetch_wasted = t.prefetch_wasted;
  out.table_uploads = t.table_changes;
  // The largest request every layer can serve (an architecture sizes its prefill bands by it):
  // with a per-layer split, the smallest layer's slots.
  out.slots_per_layer = core.min_layer_slots();
}

inline void fill_abi_layer_stats(const PagerCore& core, uint32_t layer, mp_pager_layer_stats& out) {
  const LayerCounters c = core.layer_counters(layer);
  out.struct_size = sizeof(mp_pager_layer_stats);
  out.accesses = c.accesses;
  out.hits = c.hits;
  out.misses = c.misses;
}

}  // namespace moepage::pager
