// The mapped transport's entry point and option table (the behaviour is described in
// mapped_transport.hpp and mapped_files.hpp). It has no score(): `transport: {plugin: auto}` never
// picks it, a profile names it, because it locks the checkpoint's pages in host memory.
#include "mapped_transport.hpp"
#include "moepage/cpp/plugin_adapter.hpp"

// One option: the bound on what the registered mappings lock (constexpr: internal to this file).
constexpr mp_option_def kOptions[] = {
    mp::option(MP_OPT_SIZE_OR_AUTO, "max_locked", "auto",
               "host memory the registered file mappings may lock in all; a file past it is refused at open "
               "(auto: 80% of physical memory)"),
};

MOEPAGE_PLUGIN("mapped", "0.1.0",
               mp::make_transport_descriptor<moepage::transport::MappedTransport>(
                   "mapped", "0.1.0", "files mapped and registered with the device, each read one copy from the page cache",
                   MP_CAP_CPU | MP_CAP_GPU | MP_CAP_ASYNC, kOptions))
