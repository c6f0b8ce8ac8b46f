#!/usr/bin/env bash
# Session 2026-12-07b call 2 (H100 warm after the grid): one traced paged decode each of lfru + top 3
# at 50% and 12.5% of the expert bytes (mapped transport, deferral off), with the copies recorded
# (decode-trace.sh, MOEPAGE_KERNEL_TRACE_API=1) -> paged-step.txt: where a step waits.
set -uo pipefail
T0=$SECONDS
build=$(pwd)/build-gpu; model=/tmp/flash12
trace=$(pwd)/tests/data/ds4-flash-routing-heldout.trace.xz
total=$(python3 -c "import json; print(json.load(open('/root/out/g/weights.json'))['routed_bytes_all'])" 2>/dev/null)
[ -n "$total" ] || total=$(python3 bench/gpu/weights_per_token.py $model | python3 -c "import json,sys; print(json.load(sys.stdin)['routed_bytes_all'])")
for share in 50:2 12.5:8; do
  [ $((SECONDS - T0)) -lt 170 ] || break
  name=${share%%:*}; budget=$((total / ${share#*:}))
  FLASH_MODEL_DIR=$model MOEPAGE_KERNEL_TRACE_API=1 MOEPAGE_SET="arch.plugin=deepseek4 arch.routing_replay=$trace generate.ignore_eos=true \
pager.plugin=lru pager.budget=$budget transport.plugin=mapped pager.policy=lfru arch.replay_predictions=3 arch.defer_acquire_finish=false" \
    timeout 150 bench/gpu/decode-trace.sh build-gpu "$OUT/t$name" 12 128 60 100 > "$OUT/t$name.log" 2>&1
  echo "== $name% rc=$? t=$((SECONDS - T0))"; cat "$OUT/t$name/paged-step.txt" 2>/dev/null || tail -5 "$OUT/t$name.log"
  xz -T8 -6 "$OUT/t$name/kernels.csv" 2>/dev/null; mv "$OUT/t$name.log" "$OUT/t$name/"
  tools/device/pack_out.sh "$OUT/t$name" "t$name" > /dev/null
done
echo "end t=$((SECONDS - T0))"
