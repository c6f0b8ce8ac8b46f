#!/usr/bin/env bash
# The policy table of issue 15 on a recorded real-routing trace: every eviction policy, lru with the
# trace's predictions prefetched (what the adapter-prefetch pager does live) at two proposal sizes,
# and Belady's floor, at 14 / 28 / 64 / 112 slots per layer (hipfire's budgets on the real V4-Flash).
#   bench/routing/policy-table.sh BUILD_DIR TRACE OUT_PREFIX
# Writes OUT_PREFIX.md (the moepage simulate tables, per layer too) and OUT_PREFIX.json.
set -euo pipefail
build=${1:?build dir}
trace=${2:?trace}
out=${3:?output prefix}
policies=lru,lfu,lfru,s3fifo,lru+prefetch,lru+prefetch:3,s3fifo+prefetch,belady
{
  echo "# moepage simulate $trace"
  echo
  echo "machine: $(uname -m), $(nproc) cores; date: $(date -u +%Y-%m-%dT%H:%MZ); commit: $(git rev-parse --short HEAD)"
  echo "command: $build/bin/moepage simulate $trace --slots 14,28,64,112 --policies $policies --per-layer --json $out.json"
  echo
  "$build/bin/moepage" simulate "$trace" --slots 14,28,64,112 --policies "$policies" --per-layer --json "$out.json"
} > "$out.md"
echo "wrote $out.md and $out.json"
