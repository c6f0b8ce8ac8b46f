#!/usr/bin/env bash
# A baseline arch plugin measured beside a new build in the same device call: the same moepage
# binary, machine and model, the arms interleaved (runs of one build in two calls differ by a few
# percent; a same-run baseline does not depend on which card came).
#   here, after tools/device/build.sh of the baseline's code:   tools/device/baseline.sh keep
#     -> build-carry/baseline-arch.so.xz (its arch plugin) and build-carry/baseline-arch.txt (what it is)
#   then check out and build the new code (build.sh) and carry build-carry as usual. On the GPU
#   machine, after `tar xJf build-carry/gpu.tar.xz`:            tools/device/baseline.sh unpack
#     -> build-z: build-gpu with the baseline's arch plugin, an arm like any build:
#        bench/gpu/decode-arms.sh OUT 256 4 3 base=build-z new=build-gpu
# Only the arch plugin is swapped: the baseline must speak the host's plugin ABI (same major).
set -euo pipefail
cd "$(dirname "$0")/../.."
plugin=lib/moepage/plugins/libmoepage-arch-deepseek4.so
case "${1:-}" in
  keep)
    [ -f "build-gpu/$plugin" ] || { echo "baseline.sh: no build-gpu/$plugin; run tools/device/build.sh first" >&2; exit 1; }
    mkdir -p build-carry
    xz -9 -T2 -c "build-gpu/$plugin" > build-carry/baseline-arch.so.xz
    state=$(git diff --quiet HEAD -- arch plugins core 2>/dev/null && echo clean || echo "with uncommitted changes")
    echo "arch plugin of $(git rev-parse --short HEAD) ($state), kept $(date -u +%FT%TZ)" > build-carry/baseline-arch.txt
    echo "baseline.sh: build-carry/baseline-arch.so.xz is $(du -sm build-carry/baseline-arch.so.xz | cut -f1) MiB;" \
      "with build-carry/gpu.tar.xz it must stay under the limit build.sh prints"
    ;;
  unpack)
    [ -f build-carry/baseline-arch.so.xz ] || { echo "baseline.sh: no build-carry/baseline-arch.so.xz (carry build-carry)" >&2; exit 1; }
    [ -d build-gpu/bin ] || { echo "baseline.sh: no build-gpu; unpack build-carry/gpu.tar.xz first" >&2; exit 1; }
    rm -rf build-z
    cp -r build-gpu build-z
    xz -dc build-carry/baseline-arch.so.xz > "build-z/$plugin"
    cat build-carry/baseline-arch.txt 2>/dev/null || true
    ;;
  *) sed -n '2,11p' "$0" >&2; exit 2 ;;
esac
