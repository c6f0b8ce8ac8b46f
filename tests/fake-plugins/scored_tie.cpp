// Two transports with the same score: `plugin: auto` cannot choose between them.
#include "fake_transport.hpp"

namespace {
class Seven : public fake::PatternTransport {
 public:
  using fake::PatternTransport::PatternTransport;
  static int32_t score(const mp_host_api*) { return 7; }
};
}  // namespace

MOEPAGE_PLUGIN("fake-scored-tie", "1.0.0",
               mp::make_transport_descriptor<Seven>("fake-tie-a", "1.0.0", "scores 7", MP_CAP_CPU),
               mp::make_transport_descriptor<Seven>("fake-tie-b", "1.0.0", "scores 7 too", MP_CAP_CPU))
