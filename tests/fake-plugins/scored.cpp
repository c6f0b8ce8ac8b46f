// Three transports that rank themselves for `plugin: auto`: scores 5 and 9, and one without a
// score, which is never chosen automatically.
#include "fake_transport.hpp"

MOEPAGE_PLUGIN("fake-scored", "1.0.0",
               mp::make_transport_descriptor<fake::ScoredTransport<5>>("fake-score-5", "1.0.0", "scores 5", MP_CAP_CPU),
               mp::make_transport_descriptor<fake::ScoredTransport<9>>("fake-score-9", "1.0.0", "scores 9", MP_CAP_CPU),
               mp::make_transport_descriptor<fake::PatternTransport>("fake-unscored", "1.0.0", "no score", MP_CAP_CPU))
