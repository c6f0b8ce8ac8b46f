#!/usr/bin/env bash
# Kernel-time profile of a decode run on the GPU machine (Nsight Systems when it is installed):
#   tools/device/profile.sh BUILD MODEL OUT [moepage run args...]
# Writes OUT/kernels.csv (time per kernel name) and OUT/api.csv (runtime API calls).
set -uo pipefail
build=$(cd "$1" && pwd); model=$2; out=$3; shift 3
mkdir -p "$out"
export LD_LIBRARY_PATH="$build/carry-lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
nsys=$(command -v nsys || ls /usr/local/cuda/bin/nsys /opt/nvidia/nsight-systems*/bin/nsys 2>/dev/null | head -1)
[ -n "$nsys" ] || { echo "profile.sh: nsys not found" >&2; exit 1; }
"$nsys" profile -t cuda -o "$out/prof" --force-overwrite true \
  "$build/bin/moepage" run --profile configs/default.yaml --model "$model" --set device=hip "$@" > "$out/run.log" 2>&1
"$nsys" stats -r cuda_gpu_kern_sum --format csv -o "$out/kernels" "$out/prof.nsys-rep" > /dev/null 2>&1
"$nsys" stats -r cuda_api_sum --format csv -o "$out/api" "$out/prof.nsys-rep" > /dev/null 2>&1
ls "$out"
