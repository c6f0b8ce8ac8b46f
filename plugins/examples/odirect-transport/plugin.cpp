// The odirect transport's entry point and option table. A profile selects it with
//   transport: {plugin: odirect, threads: 4, alignment: 4KiB, buffer: 1MiB, fallback: buffered}
#include "moepage/cpp/plugin_adapter.hpp"
#include "odirect_transport.hpp"

namespace {

constexpr mp_option_def kOptions[] = {
    mp::option(MP_OPT_INT, "threads", "4", "reader threads, each with its own bounce buffer (1 to 64)"),
    mp::option(MP_OPT_SIZE, "alignment", "4KiB",
               "O_DIRECT alignment of offsets, lengths and buffers: the device's logical block size or a "
               "multiple (power of two, 512 to 1MiB)"),
    mp::option(MP_OPT_SIZE, "buffer", "1MiB",
               "bounce buffer per thread; larger reads are done in windows of this size (a multiple of alignment)"),
    mp::enum_option("fallback", "buffered|error", "buffered",
                    "when the filesystem refuses O_DIRECT (tmpfs, some network filesystems): read through the "
                    "page cache with a warning, or fail"),
};

}  // namespace

MOEPAGE_PLUGIN("odirect", "0.1.0",
               mp::make_transport_descriptor<odirect::OdirectTransport>(
                   "odirect", "0.1.0", "O_DIRECT reads through aligned bounce buffers (bypasses the page cache)",
                   MP_CAP_CPU | MP_CAP_GPU | MP_CAP_ASYNC, kOptions))
