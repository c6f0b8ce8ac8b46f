#!/usr/bin/env bash
# Resident decode with the router's ids grouped on the host (arch.device_routing=false) and on the
# device (the default), one binary, interleaved over repetitions in one run on the synthesized
# Flash slice: decode-arms.sh with the arms host and device. One summary line per arm (tok/s,
# roofline fraction); every arm must print the same token ids.
#   bench/gpu/device-routing-ab.sh BUILD OUT [TOKENS] [LAYERS] [REPS]
# Environment: FLASH_MODEL_DIR (default /tmp/flash<LAYERS>; synthesized when absent).
set -uo pipefail
[ $# -ge 2 ] || { sed -n '2,7p' "$0"; exit 2; }
exec "$(dirname "$0")/decode-arms.sh" "$2" "${3:-256}" "${4:-4}" "${5:-2}" \
  "host=$1:--set arch.device_routing=false" "device=$1"
