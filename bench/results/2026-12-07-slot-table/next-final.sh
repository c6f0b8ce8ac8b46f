#!/usr/bin/env bash
# SUPERSEDED by ../2026-12-07-slot-table-queues/ran-diag1.sh (which ran these checks at 17:07 UTC);
# originally NOT RUN YET (written 2026-12-07; the session's device time ran out): the build whose reply is the
# table row and then the stamp copied into device memory (the device polls no host memory), any
# card, about 150 s. Run first next session (copy to an untracked folder; bench/results is stashed
# aside for the call); then ran-verify.sh's arms. The kernel cases, the tiny model from a one-token prompt (where the earlier build faulted or
# hung), then the 4-layer Flash slice under the held-out trace, lru 90%, host path against lookup.
set -uo pipefail
o=${OUT:?}
T0=$SECONDS
bash tools/device/call_start.sh "$o"
export LD_LIBRARY_PATH="$PWD/build-gpu/carry-lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
( . tools/device/test_env.sh build-gpu; timeout 40 build-gpu/bin/ds4-hip-kernels -tc="*slot*" ) > "$o/kernels.log" 2>&1
grep -h "test cases:\|ERROR" "$o/kernels.log" | head -5
m=build-gpu/bin/moepage
tiny() {
  local name=$1; shift
  timeout 25 "$m" run --profile configs/default.yaml --model models/ds4-debian-tiny --set device=hip --prompt-ids 11 \
    --max-tokens 32 --set pager.plugin=lru --set pager.budget=4MiB "$@" > "$o/$name.log" 2>&1
  echo "$name exit $?: $(grep -h 'slot table:\|token ids\|error:' "$o/$name.log" | cut -c1-160 | head -3 | tr '\n' '|')"
}
tiny tiny-pread-host --set transport.plugin=pread
tiny tiny-pread-slot --set transport.plugin=pread --set arch.slot_table=true
tiny tiny-mapped-slot --set transport.plugin=mapped --set arch.slot_table=true
echo "tiny t=$((SECONDS - T0))"
# A failing tiny arm: where, by compute-sanitizer (a few tokens of the tiny model take seconds).
if ! grep -q "slot table:" "$o/tiny-pread-slot.log"; then
  cs=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
  [ -n "$cs" ] && timeout 60 "$cs" --tool memcheck --print-limit 10 "$m" run --profile configs/default.yaml \
    --model models/ds4-debian-tiny --set device=hip --prompt-ids 11 --max-tokens 4 --set pager.plugin=lru \
    --set pager.budget=4MiB --set transport.plugin=pread --set arch.slot_table=true > "$o/sanitize.log" 2>&1
  grep -m 40 -E "Invalid|at 0x|by thread|Address|=========" "$o/sanitize.log" | head -40
fi
[ $((SECONDS - T0)) -lt 60 ] || exit 0
"$m" synth --preset flash --layers 4 --seed 7 --out /tmp/flash4 --log-level warn
for arm in host slot; do
  set=(); [ $arm = slot ] && set=(--set arch.slot_table=true)
  timeout 40 "$m" run --profile configs/default.yaml --model /tmp/flash4 --set device=hip --prompt-ids 11 \
    --max-tokens 256 --set pager.plugin=lru --set pager.budget=10GiB --set transport.plugin=mapped \
    --set arch.routing_replay=tests/data/ds4-flash-routing-heldout.trace.xz --set arch.replay_predictions=0 \
    --set generate.ignore_eos=true "${set[@]}" > "$o/flash-$arm.log" 2>&1
  echo "flash-$arm exit $?: $(grep -h 'slot table:\|tok/s\|error:' "$o/flash-$arm.log" | cut -c1-200 | head -4 | tr '\n' '|')"
done
grep -h "token ids" "$o"/flash-*.log | sort | uniq -c | cut -c1-60
echo "end t=$((SECONDS - T0))"
