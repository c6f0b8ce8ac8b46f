// The `paged` pager: a per-layer slot pool sized from a memory budget, evicting by pager.policy
// (lru, lfu, lfru or s3fifo). All the work is in pagers/common/paged_pager.hpp; this is the plugin's face.
#include "moepage/cpp/plugin_adapter.hpp"
#include "paged_pager.hpp"

namespace {
constexpr char kName[] = "paged";
constexpr mp_option_def kOptions[] = {MOEPAGE_PAGED_PAGER_OPTIONS("lfru")};

// For `pager: {plugin: auto}`: the general pager (the others are the resident baseline, an alias,
// and a predictor that needs an adapter file), so the only one that ranks itself.
class Paged : public moepage::paging::NamedPagedPager<kName> {
 public:
  using NamedPagedPager::NamedPagedPager;
  static int32_t score(const mp_host_api*) { return 10; }
};
}  // namespace

MOEPAGE_PLUGIN(kName, "0.3.0",
               mp::make_pager_descriptor<Paged>(kName, "0.3.0",
                                                "slot pool per layer under a memory budget, evicting by policy",
                                                MP_CAP_CPU | MP_CAP_GPU | MP_CAP_PREFETCH, kOptions))
