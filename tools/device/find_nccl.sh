#!/usr/bin/env bash
# Prints the path of an NCCL library on this machine (the system's, else the one PyTorch's wheel
# ships in site-packages/nvidia/nccl*/lib), or nothing. For parallel.collective_library on the GPU
# machine, whose NCCL is not on the loader's path.
nccl=$(ldconfig -p 2>/dev/null | awk '/libnccl\.so\.2 /{print $NF; exit}')
if [ -z "$nccl" ] && command -v python3 >/dev/null; then
  nccl=$(python3 -c 'import glob, site
hits = [f for d in site.getsitepackages() for f in sorted(glob.glob(d + "/nvidia/nccl*/lib/libnccl.so.2"))]
print(hits[0] if hits else "")' 2>/dev/null)
fi
echo "$nccl"
