#!/usr/bin/env bash
# NOT RUN YET (written 2026-12-07, fifth session): issue 16's grid on the H200 over 1,024 generated
# tokens with direct_hits (the default) and arch.run_ahead on for every arm, resident included; one
# repetition. Run it once next-verify.sh has shown run_ahead's suites green; it replaces
# 2026-12-07-direct-hits/next-h200-grid-1024.sh (the same grid without run_ahead). H200 only: on any
# other card it exits at once.
set -uo pipefail
o=${OUT:?}
T0=$SECONDS
bash tools/device/call_start.sh "$o" H200 || exit 0
ARCH="--set arch.run_ahead=true" REPS=1 timeout 560 bench/gpu/replay-grid.sh build-gpu "$o/g" /tmp/flash12 1024 > "$o/g.log" 2>&1
echo "grid rc=$? t=$((SECONDS - T0))"
tail -25 "$o/g.log"
for f in "$o"/g/*.trace; do xz -T8 -6 "$f"; done
tools/device/pack_out.sh "$o/g" grid
