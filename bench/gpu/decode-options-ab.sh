#!/usr/bin/env bash
# Resident decode of one build under two option sets (arms a and b), interleaved over repetitions
# in one run on the synthesized Flash slice: decode-arms.sh with two arms.
#   SET_A="--set k=v ..." SET_B="--set k=v ..." bench/gpu/decode-options-ab.sh BUILD OUT [TOKENS] [LAYERS] [REPS]
# Environment: FLASH_MODEL_DIR (default /tmp/flash<LAYERS>; synthesized when absent).
set -uo pipefail
[ $# -ge 2 ] || { sed -n '2,5p' "$0"; exit 2; }
exec "$(dirname "$0")/decode-arms.sh" "$2" "${3:-256}" "${4:-4}" "${5:-2}" "a=$1:${SET_A:-}" "b=$1:${SET_B:-}"
