#!/usr/bin/env bash
# Resident decode of any number of arms (a build and its options each), interleaved over
# repetitions in one run on the synthesized Flash slice: one summary line per arm (tok/s, roofline
# fraction); every arm must print the same token ids.
#   bench/gpu/decode-arms.sh OUT TOKENS LAYERS REPS ARM...
# ARM: NAME=BUILD or NAME=BUILD:--set k=v[:--set k=v...] (the options after each colon).
# Environment: FLASH_MODEL_DIR (default /tmp/flash<LAYERS>; synthesized when absent).
set -uo pipefail
[ $# -ge 5 ] || { sed -n '2,7p' "$0"; exit 2; }
out=$1 tokens=$2 layers=$3 reps=$4
shift 4
arms=("$@")
first=${arms[0]#*=}
build=$(cd "${first%%:*}" && pwd)  # the first arm's build measures the model and the bandwidth
model=${FLASH_MODEL_DIR:-/tmp/flash$layers}
prompt=11,12,13,14
source "$(dirname "$0")/decode_arms.sh"

prepare_model "$layers" 8
for rep in $(seq "$reps"); do
  for arm in "${arms[@]}"; do
    name=${arm%%=*} spec=${arm#*=}
    IFS=: read -r -a parts <<< "$spec"
    moepage=$(cd "${parts[0]}" && pwd)/bin/moepage
    opts=()
    for p in "${parts[@]:1}"; do read -r -a words <<< "$p"; opts+=("${words[@]}"); done
    run_arm "$name-$rep" "${opts[@]}"
  done
done
report_neutrality
