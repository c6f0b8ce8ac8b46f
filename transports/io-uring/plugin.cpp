// The io-uring transport's entry point and option table (the behaviour is described in
// uring_transport.hpp). It has no score(): `transport: {plugin: auto}` never picks it, a profile
// names it, because whether O_DIRECT pays depends on the disk and the memory, not on the host.
#include "moepage/cpp/plugin_adapter.hpp"
#include "uring_transport.hpp"

namespace {

constexpr mp_option_def kOptions[] = {
    mp::option(MP_OPT_INT, "queue_depth", "8",
               "reads in flight in the ring, i.e. its submission queue entries (1 to 4096)"),
    mp::option(MP_OPT_INT, "buffers", "16",
               "staging buffers (pinned, registered with the ring) for O_DIRECT windows and device copies (1 to 1024)"),
    mp::option(MP_OPT_SIZE, "buffer_size", "8MiB",
               "bytes per staging buffer; larger reads go in windows of this size (a multiple of 4KiB, up to 64MiB)"),
    mp::enum_option("direct", "auto|on|off", "auto",
                    "O_DIRECT reads that bypass the page cache: auto falls back to buffered reads (one info line) on "
                    "file systems that refuse it, on fails naming the file, off never uses it"),
    mp::enum_option("fixed_buffers", "auto|on|off", "auto",
                    "register the staging buffers with the ring (read_fixed): auto reads into them unregistered when "
                    "the kernel refuses (memlock limit), on fails instead"),
    mp::option(MP_OPT_BOOL, "sqpoll", "false",
               "a kernel thread polls the submission queue (saves syscalls, costs a "
               "busy core while reads flow)"),
    mp::option(MP_OPT_INT, "workers", "0",
               "0: submit reads inline (a page-cache hit is copied by the submitting thread); N: hand every read "
               "to at most N kernel worker threads (IOSQE_ASYNC), so page-cache reads copy in parallel (0 to 256)"),
};

}  // namespace

MOEPAGE_PLUGIN("io-uring", "0.1.0",
               mp::make_transport_descriptor<moepage::uring::UringTransport>(
                   "io-uring", "0.1.0",
                   "io_uring reads, O_DIRECT into registered pinned staging buffers, copies on a device stream",
                   MP_CAP_CPU | MP_CAP_GPU | MP_CAP_ASYNC, kOptions))
