#!/usr/bin/env bash
# One device call's worth of evidence for a change to the routed experts' prefill tiles, on the
# build that tools/device/build.sh packed: the kernel cases that run the expert tiles, the golden
# fixtures and the neutrality gate; prefill with the streamed tiles and with the register tile
# (arch.matrix_expert_stream=false) beside HF transformers; the per-kernel table of one batch;
# ncu's detail and per-instruction counters for the streamed w1/w3 and w2 kernels. Everything
# ends packed in OUT/all.tar.xz (tools/device/pack_out.sh).
#   bench/gpu/expert-tiles.sh BUILD OUT [LENGTHS]      (LENGTHS default 1024,4096; env REPS, 2)
set -uo pipefail
[ $# -ge 2 ] || { sed -n '2,8p' "$0"; exit 2; }
build=$1 out=$2 lengths=${3:-1024,4096}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$root"
tools/device/focused_suites.sh "$build" "$out/suites.log" '*streamed*,*fp16 expert tiles*,*many tokens on the matrix*' 120
REPS=${REPS:-2} "$here/prefill-arms.sh" "$build" "$out/pa" "$lengths" 4096 stream= \
  register="--set arch.matrix_expert_stream=false" > "$out/arms.log" 2>&1
tail -n +1 "$out/pa/table.md" 2>/dev/null
MOEPAGE=0 HF=0 PROFILE_LEN=1024 "$here/prefill-vs-hf.sh" "$build" "$out/k" 1024 1024 > "$out/k.log" 2>&1
head -4 "$out/k/kernels-1024.txt" 2>/dev/null
SOURCE=1 SKIP=2 DETAIL_TIMEOUT=90 "$here/kernel-detail.sh" "$build" "$out/kd" 'expert_up_stream expert_down_stream' 1024 \
  > "$out/kd.log" 2>&1
tools/device/pack_out.sh "$out"
