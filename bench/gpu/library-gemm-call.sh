#!/usr/bin/env bash
# One device call that judges arch.library_min_tokens (the dense prompt products on cuBLAS;
# bench/results/2026-12-04-library-gemm.md): whether libcublas resolves, the GPU suites that check
# the path (the kernels against the CPU, the golden fixtures on both paths, the neutrality gate),
# prefill with the option off and on beside HF transformers with each arm's per-kernel table of a
# 1,024-token prefill, and cuBLAS alone on one layer's shapes. SWEEP=1 adds the threshold sweep
# (a second call's worth of time). Leaves OUT/all.tar.xz (the device drops many loose files).
#   tar xJf build-carry/gpu.tar.xz && bench/gpu/library-gemm-call.sh OUT
set -uo pipefail
[ $# -eq 1 ] || { sed -n '2,8p' "$0"; exit 2; }
out=$1
cd "$(dirname "$0")/../.."
r="$out/r"
mkdir -p "$r"
plugin=build-gpu/lib/moepage/plugins/libmoepage-arch-deepseek4.so
ldd "$plugin" | grep -i -E 'cublas|not found' > "$r/ldd.txt" 2>&1
if grep -q 'not found' "$r/ldd.txt"; then  # torch's copy of cuBLAS, where the toolkit's is not on the path
  torch_cublas=$(python3 -c "import nvidia.cublas, os; print(os.path.join(list(nvidia.cublas.__path__)[0], 'lib'))")
  export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$torch_cublas"
  echo "using $torch_cublas" >> "$r/ldd.txt"
fi
cat "$r/ldd.txt"
tools/device/run_all.sh "$r/suites" ds4-hip-kernels ds4-hip-forward ds4-hip-run > "$r/suites.txt" 2>&1
tail -8 "$r/suites.txt"
REPS=2 PROFILE_LEN=1024 SET_A="--set arch.library_min_tokens=0" SET_B="--set arch.library_min_tokens=128" \
  bench/gpu/prefill-options-ab.sh build-gpu "$r/pab" 128,1024,4096 4096 > "$r/pab.txt" 2>&1
tail -8 "$r/pab.txt"
python3 bench/gpu/blas-shapes.py 1024 > "$r/blas.txt" 2>&1
cat "$r/blas.txt"
if [ "${SWEEP:-0}" = 1 ]; then
  OPTION=arch.library_min_tokens REPS=1 bench/gpu/min-tokens-sweep.sh build-gpu "$r/sweep" 16,32,64,128,256 0,16,64 \
    > "$r/sweep.txt" 2>&1
  tail -8 "$r/sweep.txt"
fi
(cd "$out" && tar cJf all.tar.xz r && rm -rf r)
