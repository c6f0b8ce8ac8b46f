// The `adapter-prefetch` pager: `lru` plus a low-rank predictor (an HFADPT v1 file) that
// prefetches layer L+1's likely experts after layer L. Registered with its option table now;
// its behaviour arrives with the expert paging issue (#5). Until then create() validates its
// options and refuses with "not available yet".
#include "moepage/cpp/plugin_adapter.hpp"

namespace {

constexpr const char* kNotYet =
    "pager 'adapter-prefetch' is not available yet: the predictor and its prefetching arrive with the expert "
    "paging issue (#5)";

constexpr mp_option_def kOptions[] = {
    mp::option(MP_OPT_SIZE_OR_AUTO, "budget", "auto",
               "device memory for expert slots; auto = available memory minus reserve after dense weights"),
    mp::option(MP_OPT_SIZE, "reserve", "8GiB", "memory left free when budget is auto"),
    mp::enum_option("policy", "lru|lfu|lfru", "lru", "which resident expert a miss evicts"),
    mp::option(MP_OPT_PATH, "adapter", nullptr, "predictor file (HFADPT v1)"),
    mp::option(MP_OPT_INT, "top_m", "0", "experts prefetched per layer; 0 = top-k + 2"),
};

class AdapterPrefetchPager {
 public:
  AdapterPrefetchPager(const mp_pager_create_args&, const mp::Options& options) {
    // Read every option so a bad value is reported as such, before the refusal below.
    if (!options.is_auto("budget")) (void)options.get_size("budget");
    (void)options.get_size("reserve");
    (void)options.get_string("policy");
    (void)options.get_string("adapter");
    if (options.get_int("top_m") < 0)
      throw mp::Error(MP_ERR_INVALID_ARG, "pager 'adapter-prefetch': option 'top_m' must be 0 or more");
    throw mp::Error(MP_ERR_NOT_AVAILABLE, kNotYet);
  }
  // Unreachable while the constructor refuses; present because the vtable requires them.
  void begin_token(uint64_t) { unavailable(); }
  void acquire(uint32_t, const int32_t*, uint32_t, mp_acquire_result*) { unavailable(); }
  void observe(uint32_t, const float*, uint32_t, mp_stream) { unavailable(); }
  void hint(uint32_t, const int32_t*, uint32_t) { unavailable(); }
  void stats(mp_pager_stats*) { unavailable(); }
  void layer_stats(uint32_t, mp_pager_layer_stats*) { unavailable(); }
  void set_trace(mp_trace_fn, void*) { unavailable(); }

 private:
  [[noreturn]] static void unavailable() { throw mp::Error(MP_ERR_NOT_AVAILABLE, kNotYet); }
};

}  // namespace

MOEPAGE_PLUGIN("adapter-prefetch", "0.1.0",
               mp::make_pager_descriptor<AdapterPrefetchPager>(
                   "adapter-prefetch", "0.1.0", "lru plus a predictor that prefetches the next layer's experts",
                   MP_CAP_CPU | MP_CAP_GPU | MP_CAP_PREFETCH, kOptions))
