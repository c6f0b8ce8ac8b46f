#!/usr/bin/env bash
# The GPU suites a kernel change needs, each under its own time limit (a hung kernel costs one
# stage, not the call): the ds4-hip-kernels cases matching FILTER (doctest -tc), every
# ds4-hip-forward case (the golden fixtures) and ds4-hip-run (the neutrality gate), over BUILD as
# tools/device/build.sh packed it. Output to LOG; prints each suite's summary line.
#   tools/device/focused_suites.sh BUILD LOG FILTER [KERNELS_TIMEOUT]     (default 150 s)
set -uo pipefail
[ $# -ge 3 ] || { sed -n '2,6p' "$0"; exit 2; }
build=$1 log=$2 filter=$3 limit=${4:-150}
cd "$(dirname "$0")/../.."
(
  export LD_LIBRARY_PATH="$PWD/$build/carry-lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  . tools/device/test_env.sh "$build"
  timeout "$limit" "$build/bin/ds4-hip-kernels" -tc="$filter"
  timeout 60 "$build/bin/ds4-hip-forward"
  timeout 60 "$build/bin/ds4-hip-run"
) > "$log" 2>&1
grep -h "test cases:" "$log"
