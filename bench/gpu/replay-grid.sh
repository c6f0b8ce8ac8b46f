#!/usr/bin/env bash
# The paged-decode grid of issue 16, under replayed real routing (the 12-layer Flash slice: 3 hash-
# routed and 9 scored layers), in one table: resident; at 12.5%, 25% and 50% of the expert bytes
# lru, lfru (the best policy of the routing study), lfru with the trace's recorded adapter
# proposals handed to the pager (the top 3: what the adapter-prefetch pager proposes by default),
# and lfru with the top 2 and the per-layer split of the slots (the fastest arm on the H100,
# 2026-12-07); then lru at 25% with hits first off. Arms interleaved over REPS repetitions (default
# 2). One transport for every paged arm (TRANSPORT, words of --set; default the mapped transport,
# the fastest measured). The split is taken from the trace's tail (tokens 25,600 on), which the
# replayed head never reaches (out of sample). Then the miss paths measured alone (gpu_bandwidth
# --paths 1), every arm against its bound (paged_bound.py: with each layer's bytes spread over the
# run, and each token's own from the arm's access trace) and one table of the arms' tok/s, their
# ratio to lru at the same budget, to resident and to their bounds (grid_table.py).
#
# SHARES (optional): the budgets, each a percentage of the expert bytes ("90", "12.5") or the older
# PERCENT:DIVISOR form ("12.5:8"); default "12.5 25 50".
# COMPARE (words of --set, optional): a second transport, run on lru and lfru + top 3 at 25%
# (arms compare-*), so two transports are compared in one run.
# ARCH (words of --set, optional): arch options for every arm, resident included.
#
#   bench/gpu/replay-grid.sh BUILD OUT MODEL_DIR [TOKENS] [LAYERS] [TRACE]
# Writes OUT/{<arm>-r<i>.json, <arm>-r<i>.log, <arm>-r<i>.trace, bandwidth.json, paths.json, weights.json, bound.txt,
# grid.md, summary.txt}.
set -uo pipefail
build=$(cd "$1" && pwd); out=$2; model=$3; tokens=${4:-256}; layers=${5:-12}; reps=${REPS:-2}
here=$(cd "$(dirname "$0")" && pwd)
source "$here/decode_arms.sh"
read -r -a arch_sets <<<"${ARCH:-}"
replay_arms "${6:-}" "${arch_sets[@]}"
read -r -a transport <<<"${TRANSPORT:---set transport.plugin=mapped}"

prepare_model "$layers" 1,8,16
split_trace=/tmp/replay-grid-split-tail.trace
xz -dcf "$trace" | awk 'NR == 1 { print; next } /^t / { tok = $2 } tok >= 25600' > "$split_trace"
# A share's budget in bytes: PERCENT of expert_total (rounded down), or expert_total / DIVISOR.
share_budget() {
  case $1 in
    *:*) echo $((expert_total / ${1#*:})) ;;
    *) python3 -c "import sys; from fractions import Fraction; print(int($expert_total * Fraction(sys.argv[1]) / 100))" "$1" ;;
  esac
}
split=(--set pager.split=trace --set "pager.split_trace=$split_trace")
run_arm resident
for rep in $(seq "$reps"); do
  for share in ${SHARES:-12.5 25 50}; do
    name=${share%%:*}; budget=$(share_budget "$share")
    paged=(--set pager.plugin=lru --set "pager.budget=$budget" "${transport[@]}")
    traced_arm "lru-$name-r$rep" "${paged[@]}" --set arch.replay_predictions=0
    traced_arm "lfru-$name-r$rep" "${paged[@]}" --set pager.policy=lfru --set arch.replay_predictions=0
    traced_arm "lfru-top3-$name-r$rep" "${paged[@]}" --set pager.policy=lfru --set arch.replay_predictions=3
    traced_arm "lfru-top2-split-$name-r$rep" "${paged[@]}" --set pager.policy=lfru --set arch.replay_predictions=2 "${split[@]}"
  done
  traced_arm "lru-nohitsfirst-25-r$rep" --set pager.plugin=lru --set "pager.budget=$((expert_total / 4))" "${transport[@]}" \
    --set arch.replay_predictions=0 --set arch.hits_first=false
  if [ -n "${COMPARE:-}" ]; then
    read -r -a compare <<<"$COMPARE"
    paged=(--set pager.plugin=lru --set "pager.budget=$((expert_total / 4))" "${compare[@]}")
    traced_arm "compare-lru-25-r$rep" "${paged[@]}" --set arch.replay_predictions=0
    traced_arm "compare-lfru-top3-25-r$rep" "${paged[@]}" --set pager.policy=lfru --set arch.replay_predictions=3
  fi
done
report_neutrality
grid_report
