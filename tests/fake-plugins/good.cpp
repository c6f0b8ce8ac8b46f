// A well-behaved plugin built against the current ABI; tests also load it from a host that
// claims a newer minor version, to show that plugins from an older minor still load.
#include "fake_transport.hpp"

MOEPAGE_PLUGIN("fake-good", "1.0.0",
               mp::make_transport_descriptor<fake::PatternTransport>("fake-good", "1.0.0", "pattern reads", MP_CAP_CPU,
                                                                     fake::kPatternOptions))
