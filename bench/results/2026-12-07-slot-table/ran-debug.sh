#!/usr/bin/env bash
# Ran 2026-12-07 15:08 UTC on an H100 (device call 2; timed out at 420 s: tiny-mapped-slot hung and had
# no time limit of its own). Output: debug-*.
# Where the slot lookup's illegal address at Flash geometry comes from: the tiny model with the
# mapped transport, then with a routing replay, each with the slot table; then the 4-layer Flash
# slice under compute-sanitizer for 3 tokens.
set -uo pipefail
o=${OUT:?}
T0=$SECONDS
bash tools/device/call_start.sh "$o"
export LD_LIBRARY_PATH="$PWD/build-gpu/carry-lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
m=build-gpu/bin/moepage
tiny=models/ds4-debian-tiny
run_tiny() {  # NAME extra args...
  local name=$1; shift
  "$m" run --profile configs/default.yaml --model "$tiny" --set device=hip --prompt-ids 11 --max-tokens 32 \
    --set pager.plugin=lru --set pager.budget=4MiB "$@" > "$o/$name.log" 2>&1
  echo "$name exit $?: $(grep -h 'slot table:\|token ids' "$o/$name.log" | cut -c1-200 | tr '\n' '|')"
}
run_tiny tiny-pread-slot --set transport.plugin=pread --set arch.slot_table=true
run_tiny tiny-mapped-host --set transport.plugin=mapped
run_tiny tiny-mapped-slot --set transport.plugin=mapped --set arch.slot_table=true
run_tiny tiny-replay-slot --set transport.plugin=mapped --set arch.slot_table=true \
  --set arch.routing_replay=tests/data/ds4-debian-tiny-heldout.trace.xz --set arch.replay_predictions=0 --set generate.ignore_eos=true
run_tiny tiny-replay-host --set transport.plugin=mapped \
  --set arch.routing_replay=tests/data/ds4-debian-tiny-heldout.trace.xz --set arch.replay_predictions=0 --set generate.ignore_eos=true
echo "tiny t=$((SECONDS - T0))"
"$m" synth --preset flash --layers 4 --seed 7 --out /tmp/flash4 --log-level warn
echo "synth t=$((SECONDS - T0))"
flash() {  # NAME [sanitizer words --] extra --set words
  local name=$1; shift
  local pre=()
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do pre+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  timeout 150 "${pre[@]}" "$m" run --profile configs/default.yaml --model /tmp/flash4 --set device=hip --prompt-ids 11 \
    --max-tokens 3 --set pager.plugin=lru --set pager.budget=6GiB --set arch.slot_table=true "$@" > "$o/$name.log" 2>&1
  echo "$name exit $?: $(grep -h 'slot table:\|token ids\|error' "$o/$name.log" | grep -v hipHostUnregister | cut -c1-240 | head -4 | tr '\n' '|')"
}
flash flash-pread -- --set transport.plugin=pread
flash flash-mapped -- --set transport.plugin=mapped
flash flash-replay -- --set transport.plugin=mapped --set arch.routing_replay=tests/data/ds4-flash-routing-heldout.trace.xz \
  --set arch.replay_predictions=0 --set generate.ignore_eos=true
flash flash-replay-nopdl -- --set transport.plugin=mapped --set arch.overlap_launches=false \
  --set arch.routing_replay=tests/data/ds4-flash-routing-heldout.trace.xz --set arch.replay_predictions=0 --set generate.ignore_eos=true
echo "flash t=$((SECONDS - T0))"
cs=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
echo "sanitizer: $cs"
[ -n "$cs" ] && flash flash-sanitize "$cs" --tool memcheck --print-limit 12 -- --set transport.plugin=mapped \
  --set arch.routing_replay=tests/data/ds4-flash-routing-heldout.trace.xz --set arch.replay_predictions=0 --set generate.ignore_eos=true
grep -m 60 -E "Invalid|at 0x|by thread|Address|Saved host|=========" "$o/flash-sanitize.log" | head -60
echo "end t=$((SECONDS - T0))"
