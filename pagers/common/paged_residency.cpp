// PagedPager::residency (pager.h, ABI 1.11): which experts of a layer a host may read in their
// slots without acquiring them first. An expert counts only when its slot is Valid in the
// bookkeeping and no read into the slot may still be landing: a prefetch is committed before its
// bytes arrive (paged_pager.hpp says why), so a committed prefetch whose ticket has not been
// reported is left out, as is every miss of a started acquire until acquire_finish.
#include <string>

#include "paged_pager.hpp"

namespace moepage::paging {

mp_status PagedPager::residency(uint32_t layer, void** slots, uint32_t n, uint64_t* generation) {
  // Named only when it fails: the forward asks for residency on the decode path, which allocates nothing.
  const auto where = [&] { return "pager '" + component_ + "': residency of layer " + std::to_string(layer); };
  if (generation == nullptr) throw mp::Error(MP_ERR_INVALID_ARG, where() + ": generation is NULL");
  if (layer >= cat_.n_layers || !cat_.has_experts[layer])
    throw mp::Error(MP_ERR_INVALID_ARG,
                    where() + ": expected a layer with routed experts below " + std::to_string(cat_.n_layers));
  if (!core_->is_paged(layer) || core_->pools_per_layer() != 1)
    throw mp::Error(MP_ERR_UNSUPPORTED, where() + ": the layer has no single slot pool");
  // The pool's generation moves with every insert and eviction; the epoch with every call that
  // may commit a fill or retire a read. Both only grow, so their sum changes when either does.
  *generation = core_->pool(layer).generation() + residency_epoch_[layer];
  if (slots == nullptr) return MP_OK;
  if (n != cat_.n_experts)
    throw mp::Error(MP_ERR_INVALID_ARG, where() + ": " + std::to_string(n) + " slots asked, expected the catalog's " +
                                            std::to_string(cat_.n_experts) + " experts");
  const moepage::pager::SlotPool& pool = core_->pool(layer);
  for (uint32_t e = 0; e < n; ++e) {
    const int32_t s = pool.slot_of(e);
    const bool valid = s >= 0 && pool.state(uint32_t(s)) == moepage::pager::SlotState::Valid &&
                       slot_reads_[layer][uint32_t(s)].ticket == 0;
    slots[e] = valid ? slot_base(layer, uint32_t(s)) : nullptr;
  }
  return MP_OK;
}

void PagedPager::note_layer_call(uint32_t layer) {
  if (layer < residency_epoch_.size()) ++residency_epoch_[layer];
}

}  // namespace moepage::paging
