#!/usr/bin/env bash
# One device call's worth of evidence for a change to decode's routed-expert products, on the
# build that tools/device/build.sh packed: the kernel cases that run the single-token products,
# the golden fixtures and the neutrality gate (through the matrix-core arm as well); resident
# decode of the CUDA-core products and of the matrix-core ones (arch.matrix_single_token=true)
# interleaved on the synthesized Flash slice; and the per-kernel table of a few decode steps of
# each arm under ncu. Every stage has its own time limit; everything ends packed in
# OUT/all.tar.xz (tools/device/pack_out.sh).
#   bench/gpu/decode-experts.sh BUILD OUT [LAYERS] [REPS]     (defaults 4 and 3; 256 tokens)
set -uo pipefail
[ $# -ge 2 ] || { sed -n '2,9p' "$0"; exit 2; }
build=$1 out=$2 layers=${3:-4} reps=${4:-3}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$root"
mma="arch.matrix_single_token=true"
[ "${SUITES:-1}" = 1 ] && tools/device/focused_suites.sh "$build" "$out/suites.log" \
  '*single-token*,*fp16 expert tiles*,*streamed*' 150
timeout 300 "$here/decode-arms.sh" "$out/d$layers" 256 "$layers" "$reps" cuda="$build" \
  mma="$build:--set $mma" > "$out/arms.log" 2>&1
grep -vE "^(synth|[0-9]+\s)" "$out/d$layers/summary.txt" 2>/dev/null | cut -c1-400
if [ "${GAPS:-1}" = 1 ]; then
  timeout 120 "$here/decode-gaps.sh" "$build" "$out/gc" "$layers" 64 4 > "$out/gc.log" 2>&1
  MOEPAGE_SET=$mma timeout 120 "$here/decode-gaps.sh" "$build" "$out/gm" "$layers" 64 4 > "$out/gm.log" 2>&1
  for a in gc gm; do echo "== $a"; head -8 "$out/$a/steps-table.txt" 2>/dev/null; done
fi
tools/device/pack_out.sh "$out"
