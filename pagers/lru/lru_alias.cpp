// `lru`: the `paged` pager under the name it had before it was named for what it is, so profiles
// that say pager.plugin: lru keep running. Same code, options and defaults (policy lru); messages
// name `lru` so a log matches the profile that produced it.
#include "moepage/cpp/plugin_adapter.hpp"
#include "paged_pager.hpp"

namespace {
constexpr char kName[] = "lru";
constexpr mp_option_def kOptions[] = {MOEPAGE_PAGED_PAGER_OPTIONS("lru")};
}  // namespace

MOEPAGE_PLUGIN(kName, "0.3.0",
               mp::make_pager_descriptor<moepage::paging::NamedPagedPager<kName>>(
                   kName, "0.3.0", "alias of `paged` (its former name)", MP_CAP_CPU | MP_CAP_GPU | MP_CAP_PREFETCH,
                   kOptions))
