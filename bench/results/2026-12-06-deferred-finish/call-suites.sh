#!/usr/bin/env bash
# Device call written 2026-12-06 and not run (too little device time was left to start a
# machine): the forward suite (the split-acquire cases with the deferred finish on and off) and the
# neutrality gate, on a build of 3b42e59, whose plugin defaults defer_acquire_finish to true (so the
# gate's paged arms run it with real pagers and transports).
set -uo pipefail
out=${OUT:?}
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | tee "$out/gpu.txt"
tar xJf build-carry/gpu.tar.xz
tools/device/run_all.sh "$out/suites" ds4-hip-forward ds4-hip-run > "$out/suites.txt" 2>&1
tail -6 "$out/suites.txt"
grep -h -E "split acquire|acquire_finish|test cases|assertions" "$out"/suites/*.log | tail -8
tools/device/pack_out.sh "$out/suites" suites
