// The pinned-async transport's entry point and option table (the behaviour is described in
// pinned_async_transport.hpp).
#include "moepage/cpp/plugin_adapter.hpp"
#include "pinned_async_transport.hpp"

namespace {

constexpr mp_option_def kOptions[] = {
    mp::option(MP_OPT_INT, "threads", "4", "reader threads (1 to 64)"),
    mp::option(MP_OPT_SIZE, "staging", "64MiB", "pinned staging memory per reader thread, split into `ring` buffers"),
    mp::option(MP_OPT_INT, "ring", "2", "staging buffers per reader thread: one is read into while others copy"),
    mp::option(MP_OPT_INT, "queue_depth", "16", "queued chunks before a prefetch submit() blocks"),
};

}  // namespace

MOEPAGE_PLUGIN("pinned-async", "0.2.0",
               mp::make_transport_descriptor<moepage::transport::PinnedAsyncTransport>(
                   "pinned-async", "0.2.0", "reader threads into pinned staging, copies on a device stream",
                   MP_CAP_CPU | MP_CAP_GPU | MP_CAP_ASYNC, kOptions))
