// The `paged` pager: a per-layer slot pool sized from a memory budget, evicting by pager.policy
// (lru, lfu or lfru). All the work is in pagers/common/paged_pager.hpp; this is the plugin's face.
#include "moepage/cpp/plugin_adapter.hpp"
#include "paged_pager.hpp"

namespace {

constexpr mp_option_def kOptions[] = {MOEPAGE_PAGED_PAGER_OPTIONS};

class NamedPagedPager : public moepage::paging::PagedPager {
 public:
  NamedPagedPager(const mp_pager_create_args& args, const mp::Options& options) : PagedPager(args, options, "paged") {}
};

}  // namespace

MOEPAGE_PLUGIN("paged", "0.3.0",
               mp::make_pager_descriptor<NamedPagedPager>("paged", "0.3.0",
                                                          "slot pool per layer under a memory budget, evicting by policy",
                                                          MP_CAP_CPU | MP_CAP_GPU | MP_CAP_PREFETCH, kOptions))
