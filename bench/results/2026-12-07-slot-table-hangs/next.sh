#!/usr/bin/env bash
# Written 2026-12-07 (eighth session), RAN unchanged in the ninth (22:31 UTC, an H100): results in
# ../2026-12-07-slot-table-first-run.md. The slot table's first run since the hardware-queue fix (533f9d7), the reply watch
# (66abd47), eager kernel loading and the bounded queue-ahead, then issue 16's grid with the slot
# table on every arm. Copy it to an untracked folder first (bench/results is stashed aside for a
# device call); about 550 s on any card. Usage: bash next.sh [SECONDS_AVAILABLE]
#  1. tiny model, one-token prompt, lru 4 MiB, slot table over mapped / pread / pinned-async (exits
#     after a diagnosis if mapped fails)
#  2. 4-layer Flash slice, replayed routing, lru 10 GiB, 256 tokens: host path vs slot table (ids);
#     then what eager loading costs (resident, 1,024-token prompt, EAGER vs LAZY)
#  3. the GPU suites' slot, mapped-ids and route cases (the watch's kernel case among them)
#  4. the 12-layer grid (bench/gpu/replay-grid.sh) with arch.slot_table=true on every arm, 256
#     tokens, one repetition; then, with the time left, the host path's 50% arms beside it
#  5. which cause it was: the same tiny arm with CUDA_MODULE_LOADING=LAZY (32 queues), and with
#     CUDA_DEVICE_MAX_CONNECTIONS=8 (eager loading); each given 25 s
set -uo pipefail
o=${OUT:?}
T0=$SECONDS
B=${1:-560}
bash tools/device/call_start.sh "$o"
export LD_LIBRARY_PATH="$PWD/build-gpu/carry-lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
m=build-gpu/bin/moepage
tiny() {
  local name=$1 n=$2; shift 2
  timeout "${TLIM:-70}" "$m" run --profile configs/default.yaml --model models/ds4-debian-tiny --set device=hip --prompt-ids 11 \
    --set pager.plugin=lru --set pager.budget=4MiB --max-tokens "$n" "$@" > "$o/$name.log" 2>&1
  local rc=$?
  echo "$name exit $rc t=$((SECONDS - T0)): $(grep -h 'slot table:\|token ids\|error' "$o/$name.log" | cut -c1-300 | head -3 | tr '\n' '|')"
  return $rc
}
causes() {
  TLIM=25 CUDA_MODULE_LOADING=LAZY tiny tiny-mapped-slot-lazy 32 --set transport.plugin=mapped --set arch.slot_table=true
  TLIM=25 CUDA_DEVICE_MAX_CONNECTIONS=8 tiny tiny-mapped-slot-8q 32 --set transport.plugin=mapped --set arch.slot_table=true
}
if ! tiny tiny-mapped-slot 32 --set transport.plugin=mapped --set arch.slot_table=true; then
  tiny tiny-mapped-host 32 --set transport.plugin=mapped
  causes
  echo "end t=$((SECONDS - T0))"; exit 0
fi
tiny tiny-pread-slot 32 --set transport.plugin=pread --set arch.slot_table=true
tiny tiny-pinned-slot 32 --set transport.plugin=pinned-async --set arch.slot_table=true
tiny tiny-mapped-host 32 --set transport.plugin=mapped
grep -h "^token ids" "$o"/tiny-*.log | sort | uniq -c | cut -c1-60
"$m" synth --preset flash --layers 4 --seed 7 --out /tmp/flash4 --log-level warn
fl() {
  local name=$1 n=$2; shift 2
  timeout 60 "$m" run --profile configs/default.yaml --model /tmp/flash4 --set device=hip --prompt-ids 11 \
    --max-tokens "$n" --set transport.plugin=mapped \
    --set arch.routing_replay=tests/data/ds4-flash-routing-heldout.trace.xz --set arch.replay_predictions=0 \
    --set generate.ignore_eos=true --stats-json "$o/$name.json" "$@" > "$o/$name.log" 2>&1
  local rc=$?
  echo "$name exit $rc t=$((SECONDS - T0)): $(grep -h 'slot table:\|tok/s\|error' "$o/$name.log" | cut -c1-300 | head -4 | tr '\n' '|')"
  return $rc
}
fl flash-slot 256 --set pager.plugin=lru --set pager.budget=10GiB --set arch.slot_table=true
fl flash-host 256 --set pager.plugin=lru --set pager.budget=10GiB
grep -h "^token ids" "$o"/flash-*.log | sort | uniq -c | cut -c1-60
# What eager loading costs: load, and a 1,024-token prefill (its first library product included),
# resident, with every kernel loaded at start-up (the default now) and with CUDA's lazy default.
ids=$(python3 -c "print(','.join(str((i * 7919 + 17) % 129280) for i in range(1024)))")
for mode in EAGER LAZY; do
  s0=$SECONDS
  CUDA_MODULE_LOADING=$mode timeout 90 "$m" run --profile configs/default.yaml --model /tmp/flash4 --set device=hip \
    --prompt-ids "$ids" --max-tokens 8 --set pager.plugin=resident --stats-json "$o/flash-load-$mode.json" \
    > "$o/flash-load-$mode.log" 2>&1
  echo "loading $mode: exit $? wall $((SECONDS - s0)) s $(python3 -c "import json, sys; r = json.load(open(sys.argv[1]))['run']; print('load', r['load_seconds'], 's, prefill', r['prefill_seconds'], 's')" "$o/flash-load-$mode.json" 2>&1 | tail -1)"
done
tools/device/focused_suites.sh build-gpu "$o/suites.log" "*slot*,*MappedIds*,*route*" 60
grep -E "ERROR|FAILED|test cases:" "$o/suites.log" | head -20
left=$((B - 70 - (SECONDS - T0)))
if [ $left -gt 150 ]; then
  ARCH="--set arch.slot_table=true" REPS=1 timeout $left bench/gpu/replay-grid.sh build-gpu "$o/g" /tmp/flash12 256 12 > "$o/g.log" 2>&1
  echo "grid rc=$? t=$((SECONDS - T0))"
  cat "$o/g/grid.md" 2>/dev/null || tail -20 "$o/g.log"
  grep -h "slot table:" "$o"/g/*.log 2>/dev/null | sort | uniq -c | sort -rn | head -3 | cut -c1-200
  mv "$o/g.log" "$o/g/" 2>/dev/null
  left=$((B - 70 - (SECONDS - T0)))
  if [ $left -gt 70 ]; then
    SHARES="50:2" REPS=1 timeout $left bench/gpu/replay-grid.sh build-gpu "$o/h" /tmp/flash12 256 12 > "$o/h.log" 2>&1
    echo "host-path 50% rc=$? t=$((SECONDS - T0))"
    cat "$o/h/grid.md" 2>/dev/null || tail -10 "$o/h.log"
    mv "$o/h.log" "$o/h/" 2>/dev/null
    for f in "$o"/h/*.trace; do xz -T8 -6 "$f"; done
    tools/device/pack_out.sh "$o/h" hostpath50
  fi
  for f in "$o"/g/*.trace; do xz -T8 -6 "$f"; done
  tools/device/pack_out.sh "$o/g" grid
fi
[ $((SECONDS - T0 + 55)) -lt "$B" ] && causes
mkdir -p "$o/logs" && mv "$o"/tiny-*.log "$o"/flash-* "$o"/suites.log "$o"/gpu.txt "$o/logs/" 2>/dev/null
tools/device/pack_out.sh "$o/logs" logs
echo "end t=$((SECONDS - T0))"
