#!/usr/bin/env bash
# Ran 2026-12-07 (fourth session) 09:21 UTC on an H100 (asked as nvidia-h200); results ../2026-12-07-steady-state.md
# Session 2026-12-07d call 6 (any card): paged decode in steady state. Call 5's 256-token runs at
# 75% and 90% of the expert bytes were mostly the pools' first fill (lru 90%: 1,763 misses, about
# what filling 230 slots of 9 scored layers takes), and at 50% about 40% of lru's misses are that
# fill too. Here 2,048 tokens: resident, lru and lfru + recorded top 3 at 50% and 90% (12-layer
# Flash slice, held-out trace, mapped transport), then one traced lru step at 90% late in a
# 1,200-token run (decode-trace.sh with the copies and runtime calls; paged_step.py).
set -uo pipefail
o=${OUT:?}
T0=$SECONDS
bash tools/device/call_start.sh "$o"
build=$(pwd)/build-gpu; out=$o/s; model=/tmp/flash12; tokens=2048; here=$(pwd)/bench/gpu
mkdir -p "$out"
source bench/gpu/decode_arms.sh
replay_arms
prepare_model 12 1,8 > /dev/null
run_arm resident > /dev/null
for share in 50 90; do
  budget=$((expert_total / 100 * share))
  paged=(--set pager.plugin=lru --set "pager.budget=$budget" --set transport.plugin=mapped)
  traced_arm "lru-$share-r1" "${paged[@]}" --set arch.replay_predictions=0 > /dev/null
  traced_arm "lfru-top3-$share-r1" "${paged[@]}" --set pager.policy=lfru --set arch.replay_predictions=3 > /dev/null
done
report_neutrality
grid_report
echo "grid t=$((SECONDS - T0))"
trace=$(pwd)/tests/data/ds4-flash-routing-heldout.trace.xz
budget=$((expert_total / 100 * 90))
FLASH_MODEL_DIR=$model MOEPAGE_KERNEL_TRACE_API=1 MOEPAGE_SET="arch.plugin=deepseek4 arch.routing_replay=$trace generate.ignore_eos=true \
pager.plugin=lru pager.budget=$budget transport.plugin=mapped arch.replay_predictions=0" \
  timeout 220 bench/gpu/decode-trace.sh build-gpu "$o/t90" 12 1200 1100 1160 > "$o/t90.log" 2>&1
echo "trace rc=$? t=$((SECONDS - T0))"; cat "$o/t90/paged-step.txt" 2>/dev/null || tail -5 "$o/t90.log"
rm -f "$o/t90/kernels.csv"; mv "$o/t90.log" "$o/t90/"
tools/device/pack_out.sh "$o/t90" t90 > /dev/null
for f in "$out"/*.trace; do xz -T8 -6 "$f"; done
tools/device/pack_out.sh "$out" steady
echo "end t=$((SECONDS - T0))"
