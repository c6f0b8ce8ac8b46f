// The one doctest main every suite links (tests/support, through moepage_add_test): compiled once
// for the whole build instead of once per suite.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
