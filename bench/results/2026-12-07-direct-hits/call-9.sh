#!/usr/bin/env bash
# Ran 2026-12-07 (fourth session) 09:44 UTC on an H100 (warm after a refused H200 attempt); made from call-7.sh by sed: no suites, lfru + recorded top 3, two repetitions at both budgets; results ../2026-12-07-direct-hits.md
# Session 2026-12-07d call 7 (any card): arch.direct_hits (each layer's router builds the token's
# group record on the device and a scored router sends its ids through mapped memory; a layer
# whose experts all hit launches without the host's upload) against it off, in steady-state paged
# decode (2,048 tokens) of the 12-layer Flash slice under the held-out trace, mapped transport:
# lru at 90% (two repetitions, interleaved) and 50% of the expert bytes. The GPU suites first.
set -uo pipefail
o=${OUT:?}
T0=$SECONDS
bash tools/device/call_start.sh "$o"
: suites skipped

build=$(pwd)/build-gpu; out=$o/d; model=/tmp/flash12; tokens=2048; here=$(pwd)/bench/gpu
mkdir -p "$out"
source bench/gpu/decode_arms.sh
replay_arms
prepare_model 12 1,8 > /dev/null
run_arm resident > /dev/null
off=(--set arch.direct_hits=false)
for rep in 1 2; do
  for share in 90 50; do
    :
    [ $((SECONDS - T0)) -lt 250 ] || break 2
    budget=$((expert_total / 100 * share))
    paged=(--set pager.plugin=lru --set "pager.budget=$budget" --set transport.plugin=mapped --set pager.policy=lfru --set arch.replay_predictions=3)
    run_arm "lfru-top3-$share-r$rep" "${paged[@]}" > /dev/null
    run_arm "lfru-top3-off-$share-r$rep" "${paged[@]}" "${off[@]}" > /dev/null
  done
done
report_neutrality
grid_report
echo "end t=$((SECONDS - T0))"
tools/device/pack_out.sh "$out" direct
tools/device/pack_out.sh "$o/suites" suites
