// Two transports with the same score: `plugin: auto` cannot choose between them.
#include "fake_transport.hpp"

MOEPAGE_PLUGIN("fake-scored-tie", "1.0.0",
               mp::make_transport_descriptor<fake::ScoredTransport<7>>("fake-tie-a", "1.0.0", "scores 7", MP_CAP_CPU),
               mp::make_transport_descriptor<fake::ScoredTransport<7>>("fake-tie-b", "1.0.0", "scores 7 too",
                                                                       MP_CAP_CPU))
