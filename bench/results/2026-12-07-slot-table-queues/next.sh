#!/usr/bin/env bash
# SUPERSEDED, never run: 2026-12-07-slot-table-hangs/next.sh replaces it (the eighth session found a
# second cause, lazy kernel loading, and added a reply watch; it also separates the two causes).
# Written 2026-12-07, seventh session; every later request for a device was refused.
# For the build of 533f9d7 and later, which widens the runtime's hardware queues before it starts.
# Hypothesis: a slot-lookup stall holds the compute stream's hardware queue, and the reply or a
# transport's copy stream shared that queue (8 by default; about ten streams in the process), so it
# waited for the stall that waited for it. The tiny model from a one-token prompt over mapped, pread
# and pinned-async with the slot table; the 4-layer Flash slice host vs slot (ids); the GPU suites or
# the gate alone; lru at 50/25/90% host vs slot over 2,048 tokens; lru 50% with run_ahead; last, the
# same tiny arm with CUDA_DEVICE_MAX_CONNECTIONS=8, which should time out with the new error naming
# the layer, the stamp, its word and the host's reply. Usage: bash next.sh [SECONDS_AVAILABLE]
# (copy it to an untracked folder first: bench/results is stashed aside for a device call).
set -uo pipefail
o=${OUT:?}
T0=$SECONDS
B=${1:-560}  # seconds this call may use
bash tools/device/call_start.sh "$o"
export LD_LIBRARY_PATH="$PWD/build-gpu/carry-lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
m=build-gpu/bin/moepage
tiny() {
  local name=$1 n=$2; shift 2
  timeout 58 "$m" run --profile configs/default.yaml --model models/ds4-debian-tiny --set device=hip --prompt-ids 11 \
    --set pager.plugin=lru --set pager.budget=4MiB --max-tokens "$n" "$@" > "$o/$name.log" 2>&1
  local rc=$?
  echo "$name exit $rc: $(grep -h 'slot table:\|token ids\|error:' "$o/$name.log" | cut -c1-200 | head -3 | tr '\n' '|')"
  return $rc
}
tiny tiny-mapped-slot-w 32 --set transport.plugin=mapped --set arch.slot_table=true || { echo "end t=$((SECONDS - T0))"; exit 0; }
tiny tiny-pread-slot-w 32 --set transport.plugin=pread --set arch.slot_table=true
tiny tiny-pinned-slot-w 32 --set transport.plugin=pinned-async --set arch.slot_table=true
echo "tiny t=$((SECONDS - T0))"
"$m" synth --preset flash --layers 4 --seed 7 --out /tmp/flash4 --log-level warn
fl() {
  local name=$1 n=$2; shift 2
  timeout 60 "$m" run --profile configs/default.yaml --model /tmp/flash4 --set device=hip --prompt-ids 11 \
    --max-tokens "$n" --set transport.plugin=mapped \
    --set arch.routing_replay=tests/data/ds4-flash-routing-heldout.trace.xz --set arch.replay_predictions=0 \
    --set generate.ignore_eos=true --stats-json "$o/$name.json" "$@" > "$o/$name.log" 2>&1
  local rc=$?
  echo "$name exit $rc: $(grep -h 'slot table:\|tok/s\|error:' "$o/$name.log" | cut -c1-220 | head -4 | tr '\n' '|')"
  return $rc
}
fl flash-slot-w 256 --set pager.plugin=lru --set pager.budget=10GiB --set arch.slot_table=true || { echo "end t=$((SECONDS - T0))"; exit 0; }
fl flash-host-w 256 --set pager.plugin=lru --set pager.budget=10GiB
grep -h "^token ids" "$o"/flash-*.log | sort | uniq -c | cut -c1-60
if [ $((SECONDS - T0 + 150)) -lt "$B" ]; then
  tools/device/focused_suites.sh build-gpu "$o/suites.log" "*slot*,*MappedIds*,*route*" 60
elif [ $((SECONDS - T0 + 80)) -lt "$B" ]; then  # the neutrality gate alone (its slot-table arms)
  ( . tools/device/test_env.sh build-gpu; timeout 60 build-gpu/bin/ds4-hip-run ) > "$o/suites.log" 2>&1
  grep -h "test cases:" "$o/suites.log"
fi
grep -E "ERROR|FAILED|error:" "$o/suites.log" | head -20
total=$(python3 bench/gpu/weights_per_token.py /tmp/flash4 | python3 -c "import json,sys;print(json.load(sys.stdin)['routed_bytes_all'])")
echo "expert bytes $total t=$((SECONDS - T0))"
for share in 50 25 90; do
  [ $((SECONDS - T0 + 60)) -lt "$B" ] || break
  b=$((total / 100 * share))
  fl "lru-$share-host" 2048 --set pager.plugin=lru --set "pager.budget=$b"
  fl "lru-$share-slot" 2048 --set pager.plugin=lru --set "pager.budget=$b" --set arch.slot_table=true
done
[ $((SECONDS - T0 + 30)) -lt "$B" ] && fl lru-50-ahead 2048 --set pager.plugin=lru --set "pager.budget=$((total / 2))" --set arch.run_ahead=true
grep -h "^token ids" "$o"/lru-*.log | sort | uniq -c | cut -c1-60
echo "arms t=$((SECONDS - T0))"
# The hypothesis' other half: 8 hardware queues (the runtime's default) must hang the same arm.
[ $((SECONDS - T0 + 60)) -lt "$B" ] && CUDA_DEVICE_MAX_CONNECTIONS=8 tiny tiny-mapped-slot-8 32 --set transport.plugin=mapped --set arch.slot_table=true
echo "end t=$((SECONDS - T0))"
