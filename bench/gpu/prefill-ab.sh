#!/usr/bin/env bash
# Two builds' prefill side by side in one run, beside HF transformers: each build's moepage arms
# (prefill-vs-hf.sh without the peer, with the per-kernel ncu table of one PROFILE_LEN-token
# prefill), then the peer once. So a kernel change is judged against the build before it on the
# same machine, the same clocks and the same HF figure.
#   bench/gpu/prefill-ab.sh BUILD_A BUILD_B OUT [LENGTHS] [BATCHES]
# Environment: as prefill-vs-hf.sh (REPS, PROFILE_LEN, RUN_TIMEOUT, PROFILE_TIMEOUT, HF_TIMEOUT,
# FLASH_MODEL_DIR); HF=0 skips the peer.
set -uo pipefail
[ $# -ge 3 ] || { sed -n '2,8p' "$0"; exit 2; }
a=$1 b=$2 out=$3 lengths=${4:-1024,4096} batches=${5:-4096}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
HF=0 "$here/prefill-vs-hf.sh" "$a" "$out/a" "$lengths" "$batches" > "$out/a.txt" 2>&1
HF=0 "$here/prefill-vs-hf.sh" "$b" "$out/b" "$lengths" "$batches" > "$out/b.txt" 2>&1
if [ "${HF:-1}" != 0 ]; then
  MOEPAGE=0 PROFILE_LEN= "$here/prefill-vs-hf.sh" "$b" "$out/hf" "$lengths" "$batches" > "$out/hf.txt" 2>&1
fi
{
  echo "A: $a"; cat "$out/a/table.csv"; echo
  echo "B: $b"; cat "$out/b/table.csv"; echo
  [ -f "$out/hf/table.csv" ] && { echo "HF transformers"; cat "$out/hf/table.csv"; echo; }
  for side in a b; do
    [ -f "$out/$side/kernels-${PROFILE_LEN:-}.txt" ] && { echo "kernels, $side"; head -8 "$out/$side/kernels-$PROFILE_LEN.txt"; }
  done
} | tee "$out/summary.txt"
