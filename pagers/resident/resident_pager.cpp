// The `resident` pager: every expert placed at load, nothing evicted. Registered with its option
// table now; its behaviour arrives with the expert paging issue (#5), and until then create()
// refuses with a clear "not available yet" instead of pretending.
#include "moepage/cpp/plugin_adapter.hpp"

namespace {

constexpr const char* kNotYet =
    "pager 'resident' is not available yet: placing every expert at load arrives with the expert paging issue (#5)";

class ResidentPager {
 public:
  ResidentPager(const mp_pager_create_args&, const mp::Options&) { throw mp::Error(MP_ERR_NOT_AVAILABLE, kNotYet); }
  // Unreachable while the constructor refuses; present because the vtable requires them.
  void begin_token(uint64_t) { unavailable(); }
  void acquire(uint32_t, const int32_t*, uint32_t, mp_acquire_result*) { unavailable(); }
  void stats(mp_pager_stats*) { unavailable(); }
  void layer_stats(uint32_t, mp_pager_layer_stats*) { unavailable(); }

 private:
  [[noreturn]] static void unavailable() { throw mp::Error(MP_ERR_NOT_AVAILABLE, kNotYet); }
};

}  // namespace

MOEPAGE_PLUGIN("resident", "0.1.0",
               mp::make_pager_descriptor<ResidentPager>("resident", "0.1.0",
                                                        "every expert resident from load; no paging", MP_CAP_CPU | MP_CAP_GPU))
