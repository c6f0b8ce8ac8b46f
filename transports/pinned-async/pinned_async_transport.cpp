// The `pinned-async` transport: reader threads fill pinned staging buffers and copy to the
// device on the transport's own stream, completing tickets through events. Registered with its
// option table now; its behaviour arrives with the expert paging issue (#5). Until then create()
// validates its options and refuses with "not available yet".
#include "moepage/cpp/plugin_adapter.hpp"

namespace {

constexpr const char* kNotYet =
    "transport 'pinned-async' is not available yet: pinned staging with asynchronous copies arrives with the "
    "expert paging issue (#5)";

constexpr mp_option_def kOptions[] = {
    mp::option(MP_OPT_INT, "threads", "4", "reader threads"),
    mp::option(MP_OPT_SIZE, "staging", "64MiB", "pinned staging memory per reader thread"),
    mp::option(MP_OPT_INT, "queue_depth", "16", "reads in flight before submit() blocks"),
};

class PinnedAsyncTransport {
 public:
  PinnedAsyncTransport(const mp_host_api*, const mp::Options& options) {
    // Read every option so a bad value is reported as such, before the refusal below.
    if (options.get_int("threads") < 1)
      throw mp::Error(MP_ERR_INVALID_ARG, "transport 'pinned-async': option 'threads' must be at least 1");
    (void)options.get_size("staging");
    if (options.get_int("queue_depth") < 1)
      throw mp::Error(MP_ERR_INVALID_ARG, "transport 'pinned-async': option 'queue_depth' must be at least 1");
    throw mp::Error(MP_ERR_NOT_AVAILABLE, kNotYet);
  }
  // Unreachable while the constructor refuses; present because the vtable requires them.
  void open(const char*, uint32_t*) { unavailable(); }
  void submit(const mp_read_request*, uint32_t, mp_ticket*) { unavailable(); }
  void wait(mp_ticket) { unavailable(); }
  void poll(mp_ticket) { unavailable(); }
  void stats(mp_transport_stats*) { unavailable(); }
  void ticket_event(mp_ticket, mp_event*) { unavailable(); }

 private:
  [[noreturn]] static void unavailable() { throw mp::Error(MP_ERR_NOT_AVAILABLE, kNotYet); }
};

}  // namespace

MOEPAGE_PLUGIN("pinned-async", "0.1.0",
               mp::make_transport_descriptor<PinnedAsyncTransport>(
                   "pinned-async", "0.1.0", "reader threads into pinned staging, copies on a device stream",
                   MP_CAP_CPU | MP_CAP_GPU | MP_CAP_ASYNC, kOptions))
