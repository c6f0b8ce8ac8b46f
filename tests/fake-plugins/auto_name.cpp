// A component named "auto", the word profiles use to let the host choose: refused.
#include "fake_transport.hpp"

MOEPAGE_PLUGIN("fake-auto-name", "1.0.0",
               mp::make_transport_descriptor<fake::PatternTransport>("auto", "1.0.0", "takes a reserved name",
                                                                     MP_CAP_CPU))
