#!/usr/bin/env bash
# Resident decode with the router's ids grouped on the host (arch.device_routing=false) and on the
# device (the default), one binary, interleaved over repetitions in one run on the synthesized
# Flash slice. One summary line per arm (tok/s, roofline fraction); every arm must print the same
# token ids.
#   bench/gpu/device-routing-ab.sh BUILD OUT [TOKENS] [LAYERS] [REPS]
# Environment: FLASH_MODEL_DIR (default /tmp/flash<LAYERS>; synthesized when absent).
set -uo pipefail
[ $# -ge 2 ] || { sed -n '2,7p' "$0"; exit 2; }
build=$(cd "$1" && pwd) out=$2 tokens=${3:-256} layers=${4:-4} reps=${5:-2}
model=${FLASH_MODEL_DIR:-/tmp/flash$layers}
prompt=11,12,13,14
source "$(dirname "$0")/decode_arms.sh"

prepare_model "$layers" 8
for rep in $(seq "$reps"); do
  run_arm "host-$rep" --set arch.device_routing=false
  run_arm "device-$rep"
done
report_neutrality
