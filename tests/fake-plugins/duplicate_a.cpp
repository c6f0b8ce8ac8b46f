// First of two libraries that both provide transport "fake-dup"; this one sorts first and wins.
#include "fake_transport.hpp"

MOEPAGE_PLUGIN("fake-dup-a", "1.0.0",
               mp::make_transport_descriptor<fake::PatternTransport>("fake-dup", "1.0.0-a", "first provider",
                                                                     MP_CAP_CPU))
