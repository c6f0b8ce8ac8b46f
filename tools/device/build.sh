#!/usr/bin/env bash
# Builds build-gpu here (no GPU needed) for the GPU machine: hip-nvidia, Release, only what runs
# there (the CLI, every plugin, the gpu-labelled test suites, gpu_bandwidth), stripped, plus
# build-gpu/carry-lib: every shared library those binaries need that a stock Ubuntu 24.04 with
# CUDA 13 lacks, packed into build-carry/gpu.tar.xz. Carry build-carry, unpack it there and run
# tools/device/run_all.sh (or quick_round.sh, kernel_profile.sh, bench/gpu/flash-decode.sh).
#
# build-gpu travels packed as build-carry/gpu.tar.xz (see the end), so between builds the
# intermediates (objects, static libraries, CMake's files) wait in build-gpu.objects and come
# back before the next build, which then stays incremental.
set -euo pipefail
cd "$(dirname "$0")/../.."
dir=build-gpu
stash=build-gpu.objects
keep=(bin lib carry-lib)
jobs=${JOBS:-2}
# What may travel beside the tracked tree in a device call's 64 MiB: the tracked files present here,
# since a large file moved aside for the call (the held-out traces) does not travel. Counted in disk
# blocks, as the device counts: by bytes a tree of 62.7 MiB with this pack was refused as over 64.
tracked_kib=$(git ls-files -z | while IFS= read -r -d '' f; do [ -f "$f" ] && printf '%s\0' "$f"; done |
  du -ck --files0-from=- | tail -1 | cut -f1)
limit_mib=$((64 - tracked_kib / 1024 - 1))

if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then export PATH=/usr/local/cuda/bin:$PATH; fi
command -v nvcc >/dev/null || { echo "build.sh: nvcc not found (install the CUDA toolkit)" >&2; exit 1; }

# Bring the intermediates back so make sees what is up to date.
if [ -d "$stash" ]; then
  mkdir -p "$dir"
  for entry in "$stash"/* "$stash"/.[!.]*; do
    [ -e "$entry" ] || continue
    rm -rf "${dir:?}/$(basename "$entry")"
    mv "$entry" "$dir/"
  done
  rmdir "$stash"
fi

start=$SECONDS
cmake -S . -B "$dir" -DMOEPAGE_GPU=hip-nvidia -DMOEPAGE_CUDA_ARCHS=90-real -DCMAKE_BUILD_TYPE=Release >/dev/null
# Plugins by target name (every moepage_add_plugin target), gpu suites by their ctest label.
mapfile -t plugins < <(cmake --build "$dir" --target help | sed -n 's/^\.\.\. \(moepage-\(arch\|pager\|transport\)-[A-Za-z0-9_-]*\).*/\1/p')
mapfile -t suites < <(cd "$dir" && ctest -N -L gpu | sed -n 's/^ *Test *#[0-9]*: *//p')
targets=(moepage gpu_bandwidth control_latency "${plugins[@]}" "${suites[@]}")
# The kernel tracer (bench/gpu/decode-trace.sh), where the toolkit has CUPTI.
if cmake --build "$dir" --target help | grep 'moepage-kernel-trace' >/dev/null; then targets+=(moepage-kernel-trace); fi
# The kernel micro-benchmarks only when asked (build.sh --kernel-bench): a fat 17 MB binary that
# would not leave room in a device call's 64 MiB beside the tracked tree (~47 MiB).
if [ "${1:-}" = --kernel-bench ] && [ -f tools/device/kernel-bench/CMakeLists.txt ]; then targets+=(ds4-hip-bench); fi
echo "build.sh: building ${targets[*]}"
cmake --build "$dir" -j "$jobs" --target "${targets[@]}"
echo "build.sh: built in $((SECONDS - start)) s"

# Binaries the GPU machine runs.
mapfile -t binaries < <(find "$dir/bin" "$dir/lib" -type f \( -perm -u+x -o -name '*.so*' \) 2>/dev/null)
for b in "${binaries[@]}"; do
  if file -b "$b" | grep -q '^ELF'; then strip --strip-unneeded "$b"; fi
done

# Libraries a stock Ubuntu 24.04 + CUDA 13 already has (or that must come from its driver):
# the C/C++ runtime, the dynamic loader, and CUDA's own (the runtime, cuBLAS for the dense prefill
# products, CUPTI for the kernel tracer).
system_lib='^(linux-vdso|ld-linux|libc\.|libm\.|libdl\.|librt\.|libpthread\.|libstdc\+\+\.|libgcc_s\.|libcuda\.|libcudart\.|libcublas\.|libcublasLt\.|libcupti\.|libnvidia)'
rm -rf "$dir/carry-lib"
mkdir -p "$dir/carry-lib"
for b in "${binaries[@]}"; do
  file -b "$b" | grep -q '^ELF' || continue
  # "libyaml-cpp.so.0.7 => /lib/x86_64-linux-gnu/libyaml-cpp.so.0.7 (0x...)": copy under the soname.
  ldd "$b" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | while read -r soname path; do
    [[ "$soname" =~ $system_lib ]] && continue
    [ -e "$dir/carry-lib/$soname" ] || cp -L "$path" "$dir/carry-lib/$soname"
  done
  if ldd "$b" | grep -q 'not found'; then
    echo "build.sh: $b has unresolved libraries here:" >&2
    ldd "$b" | grep 'not found' >&2
    exit 1
  fi
done
echo "build.sh: carry-lib: $(cd "$dir/carry-lib" && ls | tr '\n' ' ')"

# Park everything else until the next build.
mkdir -p "$stash"
for entry in "$dir"/* "$dir"/.[!.]*; do
  [ -e "$entry" ] || continue
  name=$(basename "$entry")
  printf '%s\n' "${keep[@]}" | grep -qx "$name" && continue
  mv "$entry" "$stash/"
done
# ...except the small files the test binaries or a curious reader may look at.
cp "$stash/CMakeCache.txt" "$dir/"

# The binaries outgrew what a working tree may carry uncompressed (64 MiB in all, ~36 MiB of it
# the tracked tree), so they travel packed: carry build-carry and unpack it first on the GPU machine
#   (run: tar xJf build-carry/gpu.tar.xz && tools/device/run_all.sh OUT). The profiling scripts
#   (perf_round.sh, kernel_profile.sh, quick_round.sh) need build.sh --kernel-bench.
mkdir -p build-carry
tar cf - "$dir" | xz -9 -T2 > build-carry/gpu.tar.xz
size_mib=$(du -sm build-carry/gpu.tar.xz | cut -f1)
echo "build.sh: build-carry/gpu.tar.xz is $size_mib MiB (limit $limit_mib)"
if [ "$size_mib" -gt "$limit_mib" ]; then
  du -sm "$dir"/*/* 2>/dev/null | sort -rn | head -10 >&2
  echo "build.sh: build-carry/gpu.tar.xz is over $limit_mib MiB; it will not travel" >&2
  exit 1
fi
