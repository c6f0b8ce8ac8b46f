// A transport whose every call throws something different: the adapter must turn each into a
// status and a message, and the host must survive.
#include <new>
#include <stdexcept>

#include "moepage/cpp/plugin_adapter.hpp"

namespace {

class ThrowingTransport {
 public:
  ThrowingTransport(const mp_host_api*, const mp::Options& options) {
    if (options.get_bool("fail_create")) throw mp::Error(MP_ERR_INVALID_ARG, "fail_create was set");
  }
  mp_status open(const char*, uint32_t*) { throw std::runtime_error("open exploded"); }
  mp_status submit(const mp_read_request*, uint32_t, mp_ticket*) { throw std::bad_alloc(); }
  mp_status wait(mp_ticket) { throw mp::Error(MP_ERR_IO, "wait: the disk is on fire"); }
  mp_status poll(mp_ticket) { throw 42; }
  mp_status stats(mp_transport_stats*) { return MP_ERR_DEVICE; }  // fails without a message
};

constexpr mp_option_def kOptions[] = {
    mp::option(MP_OPT_BOOL, "fail_create", "false", "throw from the constructor"),
};

}  // namespace

MOEPAGE_PLUGIN("fake-throwing", "1.0.0",
               mp::make_transport_descriptor<ThrowingTransport>("fake-throwing", "1.0.0", "throws from every call",
                                                                MP_CAP_CPU, kOptions))
