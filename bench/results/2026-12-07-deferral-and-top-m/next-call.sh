#!/usr/bin/env bash
# Written 2026-12-07 for the next session with a device machine, NOT RUN yet: why the deferred
# acquire_finish is slower. If the next layer's proposals (the mapped transport's own prefetch
# lane, sharing the link) slow this layer's pending reads, one copy stream
# (transport.prefetch_lane=shared) should take the loss away. Arms at 12.5% of expert bytes,
# deferral off/on x lane own/shared, lru and lfru + top 3, two repetitions; then one paged decode
# of each mode traced with the copies (bench/gpu/decode-trace.sh, MOEPAGE_KERNEL_TRACE_API=1),
# kernels.csv kept compressed for the host-side analysis. About 330 s on an H100. Carry build-carry
# (tools/device/build.sh of main, packed as 2026-12-07-deferral-and-top-m.md's machine notes say).
set -uo pipefail
T0=$SECONDS
[ -x build-gpu/bin/moepage ] || tar xJf build-carry/gpu.tar.xz
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$OUT/gpu.txt"; date -u | tee -a "$OUT/gpu.txt"
build=$(pwd)/build-gpu; out=$OUT/lanes; model=/tmp/flash12; tokens=256
source bench/gpu/decode_arms.sh
replay_arms
prepare_model 12 1,8 > /dev/null
run_arm resident > /dev/null
budget=$((expert_total / 8))
paged=(--set pager.plugin=lru --set "pager.budget=$budget" --set transport.plugin=mapped)
for rep in 1 2; do
  for lane in own shared; do
    for defer in false true; do
      [ $((SECONDS - T0)) -lt 240 ] || break 3
      mode=(--set "transport.prefetch_lane=$lane" --set "arch.defer_acquire_finish=$defer")
      run_arm "lru-$lane-$defer-r$rep" "${paged[@]}" "${mode[@]}" --set arch.replay_predictions=0 > /dev/null
      run_arm "lfru3-$lane-$defer-r$rep" "${paged[@]}" "${mode[@]}" --set pager.policy=lfru \
        --set arch.replay_predictions=3 > /dev/null
    done
  done
done
report_neutrality
grep -E '^== |decode_tok_s' "$out/summary.txt" | paste - - | sed 's/, "prefill.*//'
tools/device/pack_out.sh "$out" lanes
for defer in false true; do
  [ $((SECONDS - T0)) -lt 420 ] || break
  FLASH_MODEL_DIR=$model MOEPAGE_KERNEL_TRACE_API=1 MOEPAGE_SET="arch.plugin=deepseek4 arch.routing_replay=$trace generate.ignore_eos=true \
pager.plugin=lru pager.budget=$budget transport.plugin=mapped pager.policy=lfru arch.replay_predictions=3 \
arch.defer_acquire_finish=$defer" timeout 120 bench/gpu/decode-trace.sh build-gpu "$OUT/t-$defer" 12 128 60 100 \
    > "$OUT/t-$defer.log" 2>&1
  cat "$OUT/t-$defer/paged-step.txt"
  xz -T8 -6 "$OUT/t-$defer/kernels.csv"; mv "$OUT/t-$defer.log" "$OUT/t-$defer/"
  tools/device/pack_out.sh "$OUT/t-$defer" "t-$defer"
done
echo "end t=$((SECONDS - T0))"
