#!/usr/bin/env bash
# NOT RUN in its session (2026-12-07c); the next session ran it on an H100: ../2026-12-07-deferral-h100.md.
# Session 2026-12-07c call 3 (meant for the H200; runs on whatever card came): does deferring acquire_finish, or one copy lane, bring
# paged decode at 50% (and 25%) of expert bytes closer to each token's bound on the H200? (On an
# H100 deferral was 1-6% slower; the timing model refitted to the H200 grid puts it 4% faster at
# 50%.) 12-layer Flash slice under the held-out trace, mapped transport, lfru + recorded top 3;
# 50% two repetitions, 25% one; then paged_bound.py and grid_table.py over the folder.
set -uo pipefail
o=${OUT:?}
T0=$SECONDS
bash tools/device/call_start.sh "$o"  # any card: gpu.txt names it
build=$(pwd)/build-gpu; out=$o/d; model=/tmp/flash12; tokens=256; here=$(pwd)/bench/gpu
mkdir -p "$out"
source bench/gpu/decode_arms.sh
replay_arms
prepare_model 12 1,8 > /dev/null
run_arm resident > /dev/null
paged_arm() { traced_arm "$@" > /dev/null; }
for rep in 1 2; do
  for share in 50:2 25:4; do
    [ "$rep" = 2 ] && [ "$share" = 25:4 ] && continue
    [ $((SECONDS - T0)) -lt 230 ] || break 2
    name=${share%%:*}; budget=$((expert_total / ${share#*:}))
    paged=(--set pager.plugin=lru --set "pager.budget=$budget" --set transport.plugin=mapped)
    top3=("${paged[@]}" --set pager.policy=lfru --set arch.replay_predictions=3)
    paged_arm "lru-$name-r$rep" "${paged[@]}" --set arch.replay_predictions=0
    paged_arm "lfru-top3-$name-r$rep" "${top3[@]}"
    paged_arm "lfru-top3-defer-$name-r$rep" "${top3[@]}" --set arch.defer_acquire_finish=true
    paged_arm "lfru-top3-shared-$name-r$rep" "${top3[@]}" --set transport.prefetch_lane=shared
    paged_arm "lfru-top3-shared-defer-$name-r$rep" "${top3[@]}" --set transport.prefetch_lane=shared \
      --set arch.defer_acquire_finish=true
  done
done
report_neutrality
grid_report
echo "end t=$((SECONDS - T0))"
tools/device/pack_out.sh "$out" defer
