#!/usr/bin/env bash
# NOT RUN YET (written 2026-12-07, fifth session): arch.run_ahead (a greedy call queues the next step's front
# before the host waits for its pick). The GPU suites first (the new run_ahead cases and the gate
# with a run-ahead arm in ds4-hip-forward/ds4-hip-run, the mapped-ids failure case and the router
# cases of ds4-hip-kernels; main's review mends never ran on a GPU); then on against off in
# steady-state paged decode of the 12-layer slice under the held-out trace (lru at 90% and 50% of
# the expert bytes, 2,048 tokens, mapped transport), then in resident decode (12 layers, 256
# tokens, two repetitions interleaved) as time allows.
set -uo pipefail
o=${OUT:?}
T0=$SECONDS
bash tools/device/call_start.sh "$o"
mkdir -p "$o/suites"
tools/device/focused_suites.sh build-gpu "$o/suites/suites.log" "*MappedIds*,*route*" 60
echo "suites t=$((SECONDS - T0))"
tools/device/pack_out.sh "$o/suites" suites

build=$(pwd)/build-gpu; out=$o/d; model=/tmp/flash12; tokens=2048; here=$(pwd)/bench/gpu
mkdir -p "$out"
source bench/gpu/decode_arms.sh
replay_arms
prepare_model 12 1,8 > /dev/null
echo "prepared t=$((SECONDS - T0))"
run_arm resident > /dev/null
for share in 90 50; do
  [ $((SECONDS - T0)) -lt 400 ] || break
  budget=$((expert_total / 100 * share))
  paged=(--set pager.plugin=lru --set "pager.budget=$budget" --set transport.plugin=mapped)
  run_arm "lru-$share-on" "${paged[@]}" --set arch.run_ahead=true > /dev/null
  run_arm "lru-$share-off" "${paged[@]}" --set arch.run_ahead=false > /dev/null
done
report_neutrality
tail -10 "$out/summary.txt"
echo "paged t=$((SECONDS - T0))"
tools/device/pack_out.sh "$out" paged

if [ $((SECONDS - T0)) -lt 420 ]; then
  off="off=build-gpu:--set arch.run_ahead=false"
  timeout $((560 - (SECONDS - T0))) bench/gpu/decode-arms.sh "$o/r12" 256 12 2 "on=build-gpu:--set arch.run_ahead=true" "$off" > "$o/r12.log" 2>&1
  echo "r12 rc=$? t=$((SECONDS - T0))"; grep -E "tok/s|distinct" "$o/r12.log" | tail -6
  tools/device/pack_out.sh "$o/r12" r12
fi
echo "end t=$((SECONDS - T0))"
