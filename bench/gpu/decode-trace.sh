#!/usr/bin/env bash
# A resident decode on the GPU machine with every kernel's start and end recorded as it really ran
# (streams and overlapped launches as they were; libmoepage-kernel-trace, CUPTI's activity records),
# then the decode step's critical path: for the steps in [FROM, TO), each main-stream kernel's
# share of the step (what it adds after the one before it ends), the side streams beside it, and
# the time no kernel ran at all. Where ncu's serialised tables (decode-gaps.sh) say how long a
# kernel takes alone, this says what it costs in the step.
#   bench/gpu/decode-trace.sh BUILD OUT [LAYERS] [TOKENS] [FROM] [TO]
# Defaults: 4 layers, 256 tokens, steps 100 to 200. Environment: FLASH_MODEL_DIR (default
# /tmp/flash<LAYERS>; synthesized when absent), MOEPAGE_SET (extra --set words, e.g.
# "arch.overlap_launches=false"), MOEPAGE_KERNEL_TRACE_API=1 (the copies and the host's runtime
# calls recorded too, step_boundary.py's view of the host round trip between steps, and for a
# paged decode paged_step.py's split of each step into overlap, compute, waits for bytes and waits
# for the host).
set -uo pipefail
[ $# -ge 2 ] || { sed -n '2,12p' "$0"; exit 2; }
build=$(cd "$1" && pwd) out=$2 layers=${3:-4} tokens=${4:-256} from=${5:-100} to=${6:-200}
model=${FLASH_MODEL_DIR:-/tmp/flash$layers}
prompt=11
source "$(dirname "$0")/decode_arms.sh"
tracer="$build/lib/libmoepage-kernel-trace.so"
[ -f "$tracer" ] || { echo "decode-trace.sh: no $tracer (an NVIDIA build makes it)" >&2; exit 2; }
# CUPTI comes with the CUDA toolkit (or its Python wheel) on the GPU machine.
cupti=$(find /usr/local/cuda/ /usr/local/cuda-*/ /usr/lib /usr/local/lib -name 'libcupti.so.*' 2>/dev/null | head -1)
[ -n "$cupti" ] || cupti=$(python3 -c "import nvidia, os, glob; print(next(iter(glob.glob(os.path.join(list(nvidia.__path__)[0], '**', 'libcupti.so*'), recursive=True)), ''))" 2>/dev/null)
[ -n "$cupti" ] || { echo "decode-trace.sh: libcupti not found on this machine" >&2; exit 2; }
echo "cupti: $cupti" | tee -a "$out/summary.txt"
extra=()
for kv in ${MOEPAGE_SET:-}; do extra+=(--set "$kv"); done

prepare_model "$layers" 8
arm_args=("${extra[@]}")
run_arm plain  # the same decode untraced: what the tracing costs
LD_LIBRARY_PATH="$(dirname "$cupti"):$LD_LIBRARY_PATH" CUDA_INJECTION64_PATH="$tracer" \
  MOEPAGE_KERNEL_TRACE="$out/kernels.csv" run_arm traced
python3 "$(dirname "$0")/trace_table.py" "$out/kernels.csv" "$from" "$to" | tee "$out/trace-table.txt"
if [ "${MOEPAGE_KERNEL_TRACE_API:-}" = 1 ]; then
  python3 "$(dirname "$0")/step_boundary.py" "$out/kernels.csv" "$from" "$to" | tee "$out/step-boundary.txt"
  # A paged decode (MOEPAGE_SET naming a paging pager): where its steps wait, copies against kernels.
  if grep -q 'memcpy:HtoD' "$out/kernels.csv"; then
    python3 "$(dirname "$0")/paged_step.py" "$out/kernels.csv" "$from" "$to" | tee "$out/paged-step.txt"
  fi
fi
