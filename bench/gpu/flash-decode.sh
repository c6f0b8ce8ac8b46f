#!/usr/bin/env bash
# The H200 decode benchmark of the GPU backend: a synthesized DeepSeek-V4-Flash-shaped model with 4
# layers (256 FP4 experts of 12.75 MiB each per layer), decoded resident and with the lru pager at
# 50% and 12.5% of the expert bytes, through the pinned-async transport (and pread and io-uring at
# 12.5%; io-uring reads buffered here, like the others, since the page cache is warmed below).
# Also measures the device-to-device copy bandwidth (the roofline), pinned host->device copies and
# page-cache reads with the transport's reader thread count (the miss path's two ceilings).
#
#   bench/gpu/flash-decode.sh BUILD OUT [TOKENS]
# BUILD holds bin/moepage, lib/moepage/plugins, bin/gpu_bandwidth and carry-lib (tools/device/build.sh).
# Writes OUT/{bandwidth.json, weights.json, <arm>.json, <arm>.log, summary.txt}.
set -uo pipefail
build=$(cd "$1" && pwd); out=$2; tokens=${3:-128}
mkdir -p "$out"
model=${FLASH_MODEL_DIR:-/tmp/flash4}
threads=${READER_THREADS:-8}
prompt=11,12,13,14   # a short prompt: the run is nearly all decode
source "$(dirname "$0")/decode_arms.sh"

prepare_model 4 1,4,8,16
cat "$out/bandwidth.json" >> "$out/summary.txt"
half=$((expert_total / 2)); eighth=$((expert_total / 8))
async=(--set transport.plugin=pinned-async --set transport.threads=$threads --set transport.staging=64MiB --set transport.queue_depth=32)
run_arm resident
run_arm lru-50 --set pager.plugin=lru --set pager.budget=$half "${async[@]}"
run_arm lru-12.5 --set pager.plugin=lru --set pager.budget=$eighth "${async[@]}"
run_arm lru-12.5-pread --set pager.plugin=lru --set pager.budget=$eighth --set transport.plugin=pread --set transport.threads=$threads
run_arm lru-12.5-io-uring --set pager.plugin=lru --set pager.budget=$eighth --set transport.plugin=io-uring \
  --set transport.direct=off --set transport.queue_depth=64 --set transport.buffers=32 --set transport.buffer_size=4MiB
run_arm resident-again
report_neutrality   # on the big model too
