#!/usr/bin/env bash
# NOT RUN YET (written 2026-12-07, fifth session, whose device requests never got a machine):
# arch.run_ahead (a greedy call queues the next
# step's front before the host waits for its pick). The GPU suites first (ds4-hip-forward with the
# run_ahead cases, ds4-hip-run with a run-ahead arm in the gate, the mapped-ids failure case and the
# router cases of ds4-hip-kernels); then on against off on the 4-layer Flash slice (3 hash-routed
# and 1 scored layer) under the held-out trace: resident (256 tokens, two repetitions interleaved)
# and steady-state paged decode (lru at 90% and 50% of the expert bytes, 2,048 tokens, mapped).
set -uo pipefail
o=${OUT:?}
T0=$SECONDS
bash tools/device/call_start.sh "$o"
mkdir -p "$o/suites"
tools/device/focused_suites.sh build-gpu "$o/suites/suites.log" "*MappedIds*,*route*" 60
echo "suites t=$((SECONDS - T0))"
tools/device/pack_out.sh "$o/suites" suites

build=$(pwd)/build-gpu; out=$o/d; model=/tmp/flash4; here=$(pwd)/bench/gpu
mkdir -p "$out"
source bench/gpu/decode_arms.sh
replay_arms
prepare_model 4 1,8 > /dev/null
echo "prepared t=$((SECONDS - T0))"
tokens=256
for rep in 1 2; do
  run_arm "resident-on-r$rep" --set arch.run_ahead=true > /dev/null
  run_arm "resident-off-r$rep" --set arch.run_ahead=false > /dev/null
done
cp "$out/resident-off-r1.json" "$out/resident.json"
tokens=2048
for share in 90 50; do
  [ $((SECONDS - T0)) -lt 400 ] || break
  budget=$((expert_total / 100 * share))
  paged=(--set pager.plugin=lru --set "pager.budget=$budget" --set transport.plugin=mapped)
  run_arm "lru-$share-on" "${paged[@]}" --set arch.run_ahead=true > /dev/null
  run_arm "lru-$share-off" "${paged[@]}" --set arch.run_ahead=false > /dev/null
done
report_neutrality
grep -v "^[0-9]" "$out/summary.txt" | cut -c1-400
echo "end t=$((SECONDS - T0))"
tools/device/pack_out.sh "$out" d
