// Second provider of transport "fake-dup": must be refused, naming both libraries.
#include "fake_transport.hpp"

MOEPAGE_PLUGIN("fake-dup-b", "1.0.0",
               mp::make_transport_descriptor<fake::PatternTransport>("fake-dup", "1.0.0-b", "second provider",
                                                                     MP_CAP_CPU))
