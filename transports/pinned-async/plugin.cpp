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

// For `transport: {plugin: auto}`: made for GPU devices (staging overlapped with copies), so it
// outranks pread there; on the CPU device its staging copy is extra work, so pread wins.
class PinnedAsync : public moepage::transport::PinnedAsyncTransport {
 public:
  using PinnedAsyncTransport::PinnedAsyncTransport;
  static int32_t score(const mp_host_api* host) {
    const bool gpu = host != nullptr && MP_HAS_FIELD(host, mp_host_api, device) && host->device != nullptr &&
                     host->device->kind == MP_DEVICE_HIP;
    return gpu ? 20 : 5;
  }
};

}  // namespace

MOEPAGE_PLUGIN("pinned-async", "0.2.0",
               mp::make_transport_descriptor<PinnedAsync>(
                   "pinned-async", "0.2.0", "reader threads into pinned staging, copies on a device stream",
                   MP_CAP_CPU | MP_CAP_GPU | MP_CAP_ASYNC, kOptions))
