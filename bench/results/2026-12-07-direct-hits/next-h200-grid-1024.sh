#!/usr/bin/env bash
# NOT RUN YET (written 2026-12-07, fourth session, which got no H200): issue 16's grid on the H200 with
# direct_hits (main's default since e353b50) and 1,024 generated tokens instead of 256, so that the
# slot pools' first fill weighs less (2026-12-07-steady-state.md); one repetition fits one call
# (about 310 s estimated from the H100's rates). H200 only: on any other card it exits at once.
set -uo pipefail
o=${OUT:?}
T0=$SECONDS
bash tools/device/call_start.sh "$o" H200 || exit 0
REPS=1 timeout 540 bench/gpu/replay-grid.sh build-gpu "$o/g" /tmp/flash12 1024 > "$o/g.log" 2>&1
echo "grid rc=$? t=$((SECONDS - T0))"
tail -25 "$o/g.log"
for f in "$o"/g/*.trace; do xz -T8 -6 "$f"; done
tools/device/pack_out.sh "$o/g" grid
