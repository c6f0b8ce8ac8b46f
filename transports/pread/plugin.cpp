// The pread transport's entry point and option table.
#include "moepage/cpp/plugin_adapter.hpp"
#include "pread_transport.hpp"

namespace {

constexpr mp_option_def kOptions[] = {
    mp::option(MP_OPT_INT, "threads", "4", "reader threads that issue pread calls in parallel (1 to 256)"),
    mp::option(MP_OPT_SIZE, "chunk", "4MiB",
               "large reads are split into chunks of this size so several threads share them (4KiB to 1GiB)"),
};

// For `transport: {plugin: auto}`: the transport for the CPU device, and a sound choice anywhere.
class Pread : public moepage::pread::PreadTransport {
 public:
  using PreadTransport::PreadTransport;
  static int32_t score(const mp_host_api*) { return 10; }
};

}  // namespace

MOEPAGE_PLUGIN("pread", "0.1.0",
               mp::make_transport_descriptor<Pread>(
                   "pread", "0.1.0", "positional reads (pread) of checkpoint ranges on a small thread pool",
                   MP_CAP_CPU | MP_CAP_GPU | MP_CAP_ASYNC, kOptions))
