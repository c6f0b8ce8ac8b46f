#!/usr/bin/env bash
# Device call written 2026-12-06 and not run (no machine could be started): the forward suite and
# the neutrality gate on the deferred-finish build, then the replayed paged grid with
# arch.defer_acquire_finish false (base, the default) and true (new), same build, one repetition a
# pass, a second pass while time allows; then lfru + top-3 proposals with a per-layer slot split
# (pager.split=trace from the trace's tokens 25,600 on, out of sample) at 12.5% and 25%. Carry
# build-carry (tools/device/build.sh, packed as the results page says); about 480 s on an H100.
set -uo pipefail
out=${OUT:?}
start=$SECONDS
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$out/gpu.txt"
tar xJf build-carry/gpu.tar.xz
echo "unpacked at $((SECONDS - start)) s"
tools/device/run_all.sh "$out/suites" ds4-hip-forward ds4-hip-run > "$out/suites.txt" 2>&1
tail -8 "$out/suites.txt"
tools/device/pack_out.sh "$out/suites" suites
echo "suites done at $((SECONDS - start)) s"
# One repetition a pass, each packed at once (a call cut short keeps what was packed).
for pass in 1 2; do
  [ "$pass" = 1 ] || [ $((SECONDS - start)) -lt 300 ] || break
  bench/gpu/replay-builds-ab.sh build-gpu build-gpu:"--set arch.defer_acquire_finish=true" "$out/ab$pass" /tmp/flash12 256 1
  echo "ab pass $pass done at $((SECONDS - start)) s"
  tail -9 "$out/ab$pass/summary.txt"; cat "$out/ab$pass/bound.txt"
  [ "$pass" = 1 ] && mkdir -p "$out/sp" && cp "$out/ab1/resident-new-r1.json" "$out/sp/resident.json"
  tools/device/pack_out.sh "$out/ab$pass" "ab$pass"
done
# The split arms, each only while the call has room for it.
build=$(pwd)/build-gpu; out=$OUT/sp; model=/tmp/flash12; tokens=256
source bench/gpu/decode_arms.sh
replay_arms
prepare_model 12 1,8
split_trace=/tmp/split-tail.trace
xz -dcf "$trace" | awk 'NR == 1 { print; next } /^t / { tok = $2 } tok >= 25600' > "$split_trace"
for share in 12.5:8 25:4; do
  name=${share%%:*}; budget=$((expert_total / ${share#*:}))
  [ $((SECONDS - start)) -lt 420 ] || break
  run_arm "lfru-$name-predict3-split" --set pager.plugin=lru --set "pager.budget=$budget" --set transport.plugin=mapped \
    --set pager.policy=lfru --set arch.replay_predictions=3 --set pager.split=trace --set "pager.split_trace=$split_trace"
done
echo "split done at $((SECONDS - start)) s"
tools/device/pack_out.sh "$out" sp
