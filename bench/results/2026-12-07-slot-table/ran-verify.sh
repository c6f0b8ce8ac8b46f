#!/usr/bin/env bash
# Ran 2026-12-07 14:41 UTC on an H100 (device call 1 of this session; 262 s), with the build of the
# slot table that read its reply's table entries from mapped host memory (since replaced: the host
# now copies the row up before the stamp). Output: verify-*.
# arch.slot_table (experts looked up on the device; a step whose experts all hit makes no round
# trip) and arch.run_ahead, verified and measured on any card. The GPU suites first: the slot
# lookup's kernel tests (ds4-hip-kernels *slot*: bits against the host path, a failing host), the
# router and mapped-id cases, ds4-hip-forward (run_ahead_test among them) and ds4-hip-run (the
# gate, with slot-table arms whose pager counts must equal their twins'). Then the 4-layer Flash
# slice (3 hash-routed, 1 scored layer) under the held-out trace, lru with no recorded predictions,
# 2,048 tokens, mapped transport: slot table off/on at 90%, 50% and 25% of the expert bytes; and
# resident with run_ahead off/on.
set -uo pipefail
o=${OUT:?}
T0=$SECONDS
bash tools/device/call_start.sh "$o"
mkdir -p "$o/suites"
tools/device/focused_suites.sh build-gpu "$o/suites/suites.log" "*slot*,*MappedIds*,*route*" 90
echo "suites t=$((SECONDS - T0))"
grep -E "ERROR|FAILED|error:" "$o/suites/suites.log" | head -30
tools/device/pack_out.sh "$o/suites" suites

build=$(pwd)/build-gpu; out=$o/d; model=/tmp/flash4; here=$(pwd)/bench/gpu
mkdir -p "$out"
source bench/gpu/decode_arms.sh
replay_arms "" --set arch.replay_predictions=0
prepare_model 4 1,8 > /dev/null
echo "prepared t=$((SECONDS - T0))"
tokens=256
run_arm resident --set arch.run_ahead=false > /dev/null
run_arm resident-ahead --set arch.run_ahead=true > /dev/null
tokens=2048
for share in 90 50 25; do
  [ $((SECONDS - T0)) -lt 470 ] || break
  budget=$((expert_total / 100 * share))
  paged=(--set pager.plugin=lru --set "pager.budget=$budget" --set transport.plugin=mapped)
  run_arm "lru-$share-host" "${paged[@]}" > /dev/null
  run_arm "lru-$share-slot" "${paged[@]}" --set arch.slot_table=true > /dev/null
done
report_neutrality
grep -v "^[0-9]" "$out/summary.txt" | cut -c1-420
grep -h "slot table:" "$out"/*.log | head
echo "end t=$((SECONDS - T0))"
tools/device/pack_out.sh "$out" d
