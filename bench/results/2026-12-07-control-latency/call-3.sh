#!/usr/bin/env bash
# Ran 2026-12-07 (fourth session) call 3, 09:06 UTC, on an H100 (asked as nvidia-h200), on a build with the change
# (arch.router_ids_mapped) that was measured here and then not landed: results ../2026-12-07-control-latency.md
# What it ran: arch.router_ids_mapped (the router ids to the host through mapped memory) against the copy
# and the event, paged decode of the 12-layer Flash slice under the held-out trace (mapped transport),
# lru and lfru + recorded top 3, at 50% (two repetitions), 25% and 12.5%; the forward suite and the
# neutrality gate first.
set -uo pipefail
o=${OUT:?}
T0=$SECONDS
bash tools/device/call_start.sh "$o"
timeout 200 tools/device/run_all.sh "$o/suites" ds4-hip-forward ds4-hip-run > "$o/suites.log" 2>&1
echo "suites rc=$? t=$((SECONDS - T0))"; tail -8 "$o/suites.log"
build=$(pwd)/build-gpu; out=$o/m; model=/tmp/flash12; tokens=256; here=$(pwd)/bench/gpu
mkdir -p "$out"
source bench/gpu/decode_arms.sh
replay_arms
prepare_model 12 1,8 > /dev/null
run_arm resident > /dev/null
paged_arm() { traced_arm "$@" > /dev/null; }
for rep in 1 2; do
  for share in 50:2 25:4 8:8; do
    [ "$rep" = 2 ] && [ "$share" != 50:2 ] && continue
    [ $((SECONDS - T0)) -lt 470 ] || break 2
    name=${share%%:*}; budget=$((expert_total / ${share#*:}))
    paged=(--set pager.plugin=lru --set "pager.budget=$budget" --set transport.plugin=mapped)
    top3=("${paged[@]}" --set pager.policy=lfru --set arch.replay_predictions=3)
    copy=(--set arch.router_ids_mapped=false)
    paged_arm "lru-$name-r$rep" "${paged[@]}" --set arch.replay_predictions=0
    paged_arm "lru-copy-$name-r$rep" "${paged[@]}" --set arch.replay_predictions=0 "${copy[@]}"
    paged_arm "lfru-top3-$name-r$rep" "${top3[@]}"
    paged_arm "lfru-top3-copy-$name-r$rep" "${top3[@]}" "${copy[@]}"
  done
done
report_neutrality
grid_report
echo "end t=$((SECONDS - T0))"
tools/device/pack_out.sh "$out" mapped
tools/device/pack_out.sh "$o/suites" suites
