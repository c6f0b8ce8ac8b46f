#!/usr/bin/env bash
# NOT RUN (written 2026-12-08: the device requests of that session found no machine, then loans
# were paused). Issue 16: the slot table's unrun fix (2026-12-07-slot-table-first-run/next.sh), then
# the 50% arms of the grid on the 12-layer slice with arch.run_ahead on, host path and slot table,
# and the plain host path, then every GPU suite and the gate if the time allows. About 500 s.
# stash.sh moves bench/results aside, so first copy this file and that next.sh to tmp-drivers/
# (as call1.sh and slot-next.sh); run from the repository root as `OUT=$OUT bash tmp-drivers/call1.sh`.
set -uo pipefail
o=${OUT:?}
T0=$SECONDS
mkdir -p "$o/slot"
OUT="$o/slot" bash tmp-drivers/slot-next.sh 2>&1 | tail -40
echo "slot driver done t=$((SECONDS - T0))"
export LD_LIBRARY_PATH="$PWD/build-gpu/carry-lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
grid() {
  local name=$1 arch=$2
  mkdir -p "$o/$name"
  SHARES="50:2" REPS=2 ARCH="$arch" timeout 200 bench/gpu/replay-grid.sh build-gpu "$o/$name" /tmp/flash12 256 12 \
    > "$o/$name/run.log" 2>&1
  echo "grid $name rc=$? t=$((SECONDS - T0))"
  cut -c1-220 "$o/$name/grid.md" 2>/dev/null | grep -v "^$"
  grep -h "distinct" "$o/$name/summary.txt" "$o/$name/run.log" 2>/dev/null | head -2
}
grid ra "--set arch.run_ahead=true"
grid raslot "--set arch.run_ahead=true --set arch.slot_table=true"
if [ $((SECONDS - T0)) -lt 400 ]; then grid base ""; fi
if [ $((SECONDS - T0)) -lt 450 ]; then
  timeout $((575 - (SECONDS - T0))) tools/device/run_all.sh "$o/suites" ds4-hip-kernels ds4-hip-forward ds4-hip-run 2>&1 | tail -8
  tools/device/pack_out.sh "$o/suites" suites > /dev/null
fi
for g in base ra raslot; do [ -d "$o/$g" ] && tools/device/pack_out.sh "$o/$g" "grid-$g" >/dev/null; done
echo "end t=$((SECONDS - T0))"
