#!/usr/bin/env bash
# Second call, 2026-12-07 (ninth session): the slot table's reply now rides a device-side wait for
# the misses' reads, and the host serves a stall as soon as the device reached it. GPU cases, ids,
# then the 12-layer grid at 50% and 25% with the slot table and with the host path, back to back;
# then resident decode with and without run_ahead (12 and 4 layers).
set -uo pipefail
o=${OUT:?}
T0=$SECONDS
bash tools/device/call_start.sh "$o"
export LD_LIBRARY_PATH="$PWD/build-gpu/carry-lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
m=build-gpu/bin/moepage
tools/device/focused_suites.sh build-gpu "$o/suites.log" "*slot*,*MappedIds*,*route*" 90
grep -E "ERROR|FAILED" "$o/suites.log" | head -20
echo "suites t=$((SECONDS - T0))"
tiny() {
  local name=$1; shift
  timeout 40 "$m" run --profile configs/default.yaml --model models/ds4-debian-tiny --set device=hip --prompt-ids 11 \
    --set pager.plugin=lru --set pager.budget=4MiB --max-tokens 32 "$@" > "$o/$name.log" 2>&1
  echo "$name exit $? $(grep -h 'slot table:\|error' "$o/$name.log" | cut -c1-200 | head -2 | tr '\n' '|')"
}
tiny tiny-mapped-slot --set transport.plugin=mapped --set arch.slot_table=true
tiny tiny-pread-slot --set transport.plugin=pread --set arch.slot_table=true
tiny tiny-pinned-slot --set transport.plugin=pinned-async --set arch.slot_table=true
tiny tiny-mapped-host --set transport.plugin=mapped
grep -h "^token ids" "$o"/tiny-*.log | sort | uniq -c | cut -c1-60
ARCH="--set arch.slot_table=true" SHARES="50:2 25:4" REPS=1 timeout 240 bench/gpu/replay-grid.sh build-gpu "$o/g" /tmp/flash12 256 12 > "$o/g.log" 2>&1
echo "slot grid rc=$? t=$((SECONDS - T0))"
cat "$o/g/grid.md" 2>/dev/null || tail -20 "$o/g.log"
grep -h "slot table:" "$o"/g/*.log | cut -c1-160
SHARES="50:2 25:4" REPS=1 timeout 200 bench/gpu/replay-grid.sh build-gpu "$o/h" /tmp/flash12 256 12 > "$o/h.log" 2>&1
echo "host grid rc=$? t=$((SECONDS - T0))"
cat "$o/h/grid.md" 2>/dev/null || tail -20 "$o/h.log"
cat "$o"/g/*.log "$o"/h/*.log 2>/dev/null | grep -h "^token ids" | sort | uniq -c | wc -l | sed 's/^/distinct id lines over both grids: /'
for d in g h; do mv "$o/$d.log" "$o/$d/"; for f in "$o"/$d/*.trace; do xz -T8 -6 "$f"; done; tools/device/pack_out.sh "$o/$d" grid-$d; done
timeout 120 bench/gpu/decode-arms.sh "$o/d12" 256 12 2 base=build-gpu ra=build-gpu:"--set arch.run_ahead=true" > "$o/d12.log" 2>&1
echo "decode 12 rc=$? t=$((SECONDS - T0))"; grep -E "^==|tok/s|neutral" "$o/d12.log" | cut -c1-200
timeout 100 bench/gpu/decode-arms.sh "$o/d4" 256 4 2 base=build-gpu ra=build-gpu:"--set arch.run_ahead=true" > "$o/d4.log" 2>&1
echo "decode 4 rc=$? t=$((SECONDS - T0))"; grep -E "^==|tok/s|neutral" "$o/d4.log" | cut -c1-200
mkdir -p "$o/logs" && mv "$o"/tiny-*.log "$o"/suites.log "$o"/gpu.txt "$o"/d12* "$o"/d4* "$o/logs/" 2>/dev/null
tools/device/pack_out.sh "$o/logs" logs
echo "end t=$((SECONDS - T0))"
