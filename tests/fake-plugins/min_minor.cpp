// Built with MIN_ABI_MINOR 0 (moepage_add_plugin): it uses nothing newer than ABI 1.0, so its
// manifest says 1.0 and a 1.0 host loads it, although the headers it was built with are newer.
#include "fake_transport.hpp"

MOEPAGE_PLUGIN("fake-min-minor", "1.0.0",
               mp::make_transport_descriptor<fake::PatternTransport>("fake-min-minor", "1.0.0", "needs ABI 1.0 only",
                                                                     MP_CAP_CPU))
