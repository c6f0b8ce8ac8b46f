#!/usr/bin/env bash
# Expert-parallel decode on the synthesized Flash slice beside one rank, in one run: resident (one
# rank routed on the device, and on the host as the ranks route), two ranks summing the way the
# machine allows (NCCL when each rank has its own GPU and the library is found, else through
# pinned memory) and through the host, and two ranks paging with lru at 12.5% and 25% of their
# own expert bytes beside one rank at the same fractions. Every arm must print the same ids; each
# arm's summary adds the all-reduces' share of its run (collective_seconds over the run's time).
#   bench/gpu/ranks-decode.sh BUILD OUT [TOKENS] [LAYERS]
set -uo pipefail
[ $# -ge 2 ] || { sed -n '2,8p' "$0"; exit 2; }
build=$(cd "$1" && pwd); out=$2; tokens=${3:-128}; layers=${4:-4}
model=${FLASH_MODEL_DIR:-/tmp/flash$layers}
prompt=11,12,13,14
source "$(dirname "$0")/decode_arms.sh"

prepare_model "$layers" 8
rank_arms
# Budgets: a rank's share of the experts is half of them, and pager.budget applies per rank.
one_eighth=$((expert_total / 8)) one_quarter=$((expert_total / 4))
rank_eighth=$((expert_total / 2 / 8)) rank_quarter=$((expert_total / 2 / 4))

run_arm resident
run_arm resident-host-routing --set arch.device_routing=false
run_arm ranks2 --set parallel.ranks=2 "${library[@]}"
grep -h "expert-parallel ranks" "$out/ranks2.log" | tee -a "$out/summary.txt"
collective_share ranks2
run_arm ranks2-host-sum --set parallel.ranks=2 --set parallel.collective=host
collective_share ranks2-host-sum
run_arm lru-12.5 --set pager.plugin=lru --set pager.budget=$one_eighth "${async[@]}"
run_arm ranks2-lru-12.5 --set parallel.ranks=2 --set pager.plugin=lru --set pager.budget=$rank_eighth "${async[@]}" \
  "${library[@]}"
collective_share ranks2-lru-12.5
run_arm lru-25 --set pager.plugin=lru --set pager.budget=$one_quarter "${async[@]}"
run_arm ranks2-lru-25 --set parallel.ranks=2 --set pager.plugin=lru --set pager.budget=$rank_quarter "${async[@]}" \
  "${library[@]}"
collective_share ranks2-lru-25
report_neutrality
