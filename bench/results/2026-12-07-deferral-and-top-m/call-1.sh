#!/usr/bin/env bash
# One call (2026-12-07), in priority order, each stage packed as it ends: the build of main with the
# plugin defaulting arch.defer_acquire_finish to true (uncommitted flip): (1) the forward suite and
# the neutrality gate; (2) the replayed grid, deferral off vs on, one repetition; (3) at 12.5% and
# 25% with the deferral: lfru + top 2, lfru + top 3 with the per-layer split (out of sample);
# (4) on an H200 only: prefill at 1,024 and 4,096 tokens beside HF transformers (issue 17);
# (5) while time is left, a second repetition of (2).
set -uo pipefail
out=${OUT:?}
T0=$SECONDS
left() { echo $((580 - (SECONDS - T0))); }
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,clocks.max.mem --format=csv,noheader | tee "$out/gpu.txt"
date -u | tee -a "$out/gpu.txt"
h200=0; nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 && h200=1
[ -x build-gpu/bin/moepage ] || tar xJf build-carry/gpu.tar.xz
echo "unpacked at $((SECONDS - T0)) s"
timeout 120 tools/device/run_all.sh "$out/suites" ds4-hip-forward ds4-hip-run > "$out/suites-run.txt" 2>&1
tail -4 "$out/suites-run.txt"; mv "$out/suites-run.txt" "$out/suites/"
grep -h -E "^\[doctest\] (test cases|assertions)" "$out"/suites/*.log
tools/device/pack_out.sh "$out/suites" suites
echo "suites done at $((SECONDS - T0)) s"
ab() {
  timeout "$(left)" bench/gpu/replay-builds-ab.sh build-gpu:"--set arch.defer_acquire_finish=false" build-gpu "$out/ab$1" /tmp/flash12 256 1 > "$out/ab$1-run.log" 2>&1
  mv "$out/ab$1-run.log" "$out/ab$1/"; cp "$out/ab$1/resident-new-r1.json" "$out/resident-new-ab$1.json"
  echo "ab $1 done at $((SECONDS - T0)) s"
  grep -E "distinct|GB/s" "$out/ab$1/summary.txt"; tail -9 "$out/ab$1/summary.txt"; cat "$out/ab$1/bound.txt"
  tools/device/pack_out.sh "$out/ab$1" "ab$1"
}
ab 1
( build=$(pwd)/build-gpu; out=$OUT/p; model=/tmp/flash12; tokens=256
  source bench/gpu/decode_arms.sh
  replay_arms
  prepare_model 12 1,8 > /dev/null
  cp "$OUT/resident-new-ab1.json" "$out/resident.json"
  split_trace=/tmp/split-tail.trace
  xz -dcf "$trace" | awk 'NR == 1 { print; next } /^t / { tok = $2 } tok >= 25600' > "$split_trace"
  for share in 12.5:8 25:4; do
    name=${share%%:*}; budget=$((expert_total / ${share#*:}))
    [ $((SECONDS - T0)) -lt 500 ] || break
    paged=(--set pager.plugin=lru --set "pager.budget=$budget" --set transport.plugin=mapped --set pager.policy=lfru)
    run_arm "lfru2-$name" "${paged[@]}" --set arch.replay_predictions=2 > /dev/null
    run_arm "lfru3split-$name" "${paged[@]}" --set arch.replay_predictions=3 --set pager.split=trace \
      --set "pager.split_trace=$split_trace" > /dev/null
    [ $((SECONDS - T0)) -lt 500 ] || break
    run_arm "lfru2split-$name" "${paged[@]}" --set arch.replay_predictions=2 --set pager.split=trace \
      --set "pager.split_trace=$split_trace" > /dev/null
  done
  report_neutrality
  python3 bench/gpu/paged_bound.py "$out" | tee "$out/bound.txt"
  tools/device/pack_out.sh "$out" p )
echo "arms done at $((SECONDS - T0)) s"
if [ $h200 = 1 ] && [ "$(left)" -gt 150 ]; then
  FLASH_MODEL_DIR=/tmp/flash4 REPS=1 timeout "$(left)" bench/gpu/prefill-arms.sh build-gpu "$out/pa" 1024,4096 4096 main= > "$out/pa-run.log" 2>&1; mv "$out/pa-run.log" "$out/pa/"
  cat "$out/pa/table.md" 2>/dev/null; echo "prefill done at $((SECONDS - T0)) s"
  tools/device/pack_out.sh "$out/pa" pa
fi
[ "$(left)" -gt 240 ] && ab 2
echo "end at $((SECONDS - T0)) s"
