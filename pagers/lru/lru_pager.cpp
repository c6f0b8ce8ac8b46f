// The `lru` pager: a per-layer slot pool sized from a memory budget, evicting by policy.
// Registered with its option table now; the slot pool arrives with the expert paging issue (#5).
// Until then create() validates its options and refuses with "not available yet".
#include "moepage/cpp/plugin_adapter.hpp"

namespace {

constexpr const char* kNotYet =
    "pager 'lru' is not available yet: the slot pool and its eviction policies arrive with the expert paging "
    "issue (#5)";

constexpr mp_option_def kOptions[] = {
    mp::option(MP_OPT_SIZE_OR_AUTO, "budget", "auto",
               "device memory for expert slots; auto = available memory minus reserve after dense weights"),
    mp::option(MP_OPT_SIZE, "reserve", "8GiB", "memory left free when budget is auto"),
    mp::enum_option("policy", "lru|lfu|lfru", "lru", "which resident expert a miss evicts"),
};

class LruPager {
 public:
  LruPager(const mp_pager_create_args&, const mp::Options& options) {
    // Read every option so a bad value is reported as such, before the refusal below.
    if (!options.is_auto("budget")) (void)options.get_size("budget");
    (void)options.get_size("reserve");
    (void)options.get_string("policy");
    throw mp::Error(MP_ERR_NOT_AVAILABLE, kNotYet);
  }
  // Unreachable while the constructor refuses; present because the vtable requires them.
  void begin_token(uint64_t) { unavailable(); }
  void acquire(uint32_t, const int32_t*, uint32_t, mp_acquire_result*) { unavailable(); }
  void stats(mp_pager_stats*) { unavailable(); }
  void layer_stats(uint32_t, mp_pager_layer_stats*) { unavailable(); }
  void set_trace(mp_trace_fn, void*) { unavailable(); }

 private:
  [[noreturn]] static void unavailable() { throw mp::Error(MP_ERR_NOT_AVAILABLE, kNotYet); }
};

}  // namespace

MOEPAGE_PLUGIN("lru", "0.1.0",
               mp::make_pager_descriptor<LruPager>("lru", "0.1.0", "slot pool per layer under a memory budget",
                                                   MP_CAP_CPU | MP_CAP_GPU, kOptions))
