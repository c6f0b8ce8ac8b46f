// The `lru` pager: a per-layer slot pool sized from a memory budget, evicting by policy
// (lru, lfu or lfru). All the work is in paged_pager.hpp; this file is the plugin's face.
#include "moepage/cpp/plugin_adapter.hpp"
#include "paged_pager.hpp"

namespace {

constexpr mp_option_def kOptions[] = {MOEPAGE_PAGED_PAGER_OPTIONS};

class LruPager : public moepage::paging::PagedPager {
 public:
  LruPager(const mp_pager_create_args& args, const mp::Options& options) : PagedPager(args, options, "lru") {}
};

}  // namespace

MOEPAGE_PLUGIN("lru", "0.2.0",
               mp::make_pager_descriptor<LruPager>("lru", "0.2.0", "slot pool per layer under a memory budget",
                                                   MP_CAP_CPU | MP_CAP_GPU | MP_CAP_PREFETCH, kOptions))
