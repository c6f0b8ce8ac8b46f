#!/usr/bin/env bash
# A suite run without MOEPAGE_TEST_SOURCE_DIR must stop with a failing status and a line that names
# the variable, not fail test by test on paths that do not exist.
#   unset_variable.sh SUITE_BINARY
out=$(env -u MOEPAGE_TEST_SOURCE_DIR "$1" 2>&1)
rc=$?
echo "$out" | tail -n 5
[ "$rc" -ne 0 ] || { echo "FAIL: exit status 0 without MOEPAGE_TEST_SOURCE_DIR"; exit 1; }
grep -q "MOEPAGE_TEST_SOURCE_DIR is not set; run the suite through ctest" <<< "$out" \
  || { echo "FAIL: no line naming MOEPAGE_TEST_SOURCE_DIR"; exit 1; }
