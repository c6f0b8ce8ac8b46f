// Two transports: one scores 0 (unusable here: skipped quietly), one scores 1 (kept).
#include "fake_transport.hpp"

MOEPAGE_PLUGIN("fake-score-zero", "1.0.0",
               mp::make_transport_descriptor<fake::ScoredTransport<0>>("fake-unusable", "1.0.0", "scores 0",
                                                                       MP_CAP_CPU),
               mp::make_transport_descriptor<fake::ScoredTransport<1>>("fake-usable", "1.0.0", "scores 1", MP_CAP_CPU))
