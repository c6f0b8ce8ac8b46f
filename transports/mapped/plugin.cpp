// The mapped transport's entry point and option table (the behaviour is described in
// mapped_transport.hpp and mapped_files.hpp). It has no score(): `transport: {plugin: auto}` never
// picks it, a profile names it, because it locks the checkpoint's pages in host memory.
#include "mapped_transport.hpp"
#include "moepage/cpp/plugin_adapter.hpp"

// The bound on what the registered mappings lock, and where prefetch copies queue (constexpr:
// internal to this file).
constexpr mp_option_def kOptions[] = {
    mp::option(MP_OPT_SIZE_OR_AUTO, "max_locked", "auto",
               "host memory the registered file mappings may lock in all; a file past it is refused at open "
               "(auto: 80% of physical memory)"),
    mp::enum_option("prefetch_lane", "own|shared", "own",
                    "GPU: own = prefetch copies on a stream of their own, running beside demand copies and "
                    "sharing the link with them; shared = one stream, every copy in submission order (a "
                    "demand copy then waits for the prefetches queued before it, which keep the whole link)"),
};

MOEPAGE_PLUGIN("mapped", "0.1.0",
               mp::make_transport_descriptor<moepage::transport::MappedTransport>(
                   "mapped", "0.1.0",
                   "files mapped and registered with the device, each read one copy from the page cache",
                   MP_CAP_CPU | MP_CAP_GPU | MP_CAP_ASYNC, kOptions))
