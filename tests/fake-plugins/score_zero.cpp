// Two transports: one scores 0 (unusable here: skipped quietly), one scores 1 (kept).
#include "fake_transport.hpp"

namespace {
struct Unusable : fake::PatternTransport {
  using fake::PatternTransport::PatternTransport;
  static int32_t score(const mp_host_api*) { return 0; }
};
struct Usable : fake::PatternTransport {
  using fake::PatternTransport::PatternTransport;
  static int32_t score(const mp_host_api*) { return 1; }
};
}  // namespace

MOEPAGE_PLUGIN("fake-score-zero", "1.0.0",
               mp::make_transport_descriptor<Unusable>("fake-unusable", "1.0.0", "scores 0", MP_CAP_CPU),
               mp::make_transport_descriptor<Usable>("fake-usable", "1.0.0", "scores 1", MP_CAP_CPU))
