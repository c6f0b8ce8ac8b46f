#!/usr/bin/env bash
# Ran 2026-12-07 (fourth session) 09:17 UTC on an H100 (asked as nvidia-h200); results ../2026-12-07-steady-state.md
# Session 2026-12-07d call 5 (any card): what the host's part of a paged step costs where nearly
# every expert hits, the regime a device-side slot table is for (issue 16: "a token with no miss
# makes no host round trip"). 12-layer Flash slice under the held-out trace, mapped transport:
# resident against lru and lfru + recorded top 3 at 75% and 90% of the expert bytes, then one
# traced lru step at 90% (decode-trace.sh with the copies and runtime calls: paged_step.py's split
# of a step into overlap, compute, waits for bytes and waits for the host).
set -uo pipefail
o=${OUT:?}
T0=$SECONDS
bash tools/device/call_start.sh "$o"
build=$(pwd)/build-gpu; out=$o/h; model=/tmp/flash12; tokens=256; here=$(pwd)/bench/gpu
mkdir -p "$out"
source bench/gpu/decode_arms.sh
replay_arms
prepare_model 12 1,8 > /dev/null
run_arm resident > /dev/null
for share in 75 90; do
  budget=$((expert_total / 100 * share))
  paged=(--set pager.plugin=lru --set "pager.budget=$budget" --set transport.plugin=mapped)
  traced_arm "lru-$share-r1" "${paged[@]}" --set arch.replay_predictions=0 > /dev/null
  traced_arm "lfru-top3-$share-r1" "${paged[@]}" --set pager.policy=lfru --set arch.replay_predictions=3 > /dev/null
done
run_arm resident-r2 > /dev/null
report_neutrality
grid_report
echo "grid t=$((SECONDS - T0))"
trace=$(pwd)/tests/data/ds4-flash-routing-heldout.trace.xz
budget=$((expert_total / 100 * 90))
FLASH_MODEL_DIR=$model MOEPAGE_KERNEL_TRACE_API=1 MOEPAGE_SET="arch.plugin=deepseek4 arch.routing_replay=$trace generate.ignore_eos=true \
pager.plugin=lru pager.budget=$budget transport.plugin=mapped arch.replay_predictions=0" \
  timeout 200 bench/gpu/decode-trace.sh build-gpu "$o/t90" 12 128 60 100 > "$o/t90.log" 2>&1
echo "trace rc=$? t=$((SECONDS - T0))"; cat "$o/t90/paged-step.txt" 2>/dev/null || tail -5 "$o/t90.log"
xz -T8 -6 "$o/t90/kernels.csv" 2>/dev/null; mv "$o/t90.log" "$o/t90/"
tools/device/pack_out.sh "$o/t90" t90 > /dev/null
tools/device/pack_out.sh "$out" high
echo "end t=$((SECONDS - T0))"
