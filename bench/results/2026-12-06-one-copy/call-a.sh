#!/usr/bin/env bash
# Device call A (2026-12-06 evening): the GPU suites on the one-copy build, then the replayed paged
# grid with main's plugins (base) and the one-copy build (new), one repetition.
set -uo pipefail
out=${OUT:?}
start=$SECONDS
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | tee "$out/gpu.txt"
tar xJf build-carry/gpu.tar.xz
cp -r build-gpu build-base
cp baselines/plugins/*.so build-base/lib/moepage/plugins/
echo "unpacked at $((SECONDS - start)) s"
tools/device/run_all.sh "$out/suites" ds4-hip-kernels ds4-hip-forward ds4-hip-run > "$out/suites.txt" 2>&1
tail -8 "$out/suites.txt"
echo "suites done at $((SECONDS - start)) s"
bench/gpu/replay-builds-ab.sh build-base build-gpu "$out/ab" /tmp/flash12 256 "${REPS:-1}"
echo "ab done at $((SECONDS - start)) s"
tools/device/pack_out.sh "$out/suites" suites
tools/device/pack_out.sh "$out/ab" ab
