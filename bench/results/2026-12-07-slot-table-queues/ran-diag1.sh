#!/usr/bin/env bash
# Ran 2026-12-07 17:07 UTC on an H100 80GB HBM3 (311 s), build of fd8dbe0 (the reply copied into
# device memory). Output: the other files of this folder (the tiny logs did not come back: too many
# files). Findings in ../2026-12-07-slot-table-queues.md.
# Kernel cases, tiny model from a one-token prompt (pread/mapped), memcheck or a host backtrace on
# failure, then the 4-layer Flash slice host vs slot; if those pass, the verify arms.
set -uo pipefail
o=${OUT:?}
T0=$SECONDS
bash tools/device/call_start.sh "$o"
export LD_LIBRARY_PATH="$PWD/build-gpu/carry-lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
( . tools/device/test_env.sh build-gpu; timeout 60 build-gpu/bin/ds4-hip-kernels -tc="*slot*" ) > "$o/kernels.log" 2>&1
echo "kernels: $(grep -h 'test cases:' "$o/kernels.log")"; grep -h "ERROR" "$o/kernels.log" | head -5
m=build-gpu/bin/moepage
cs=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
cg=$(command -v cuda-gdb || ls /usr/local/cuda/bin/cuda-gdb 2>/dev/null)
tiny_args() { echo run --profile configs/default.yaml --model models/ds4-debian-tiny --set device=hip --prompt-ids 11 \
  --set pager.plugin=lru --set pager.budget=4MiB; }
tiny() {
  local name=$1 n=$2; shift 2
  timeout 25 "$m" $(tiny_args) --max-tokens "$n" "$@" > "$o/$name.log" 2>&1
  local rc=$?
  echo "$name exit $rc: $(grep -h 'slot table:\|token ids\|error:' "$o/$name.log" | cut -c1-200 | head -3 | tr '\n' '|')"
  return $rc
}
tiny tiny-pread-host 32 --set transport.plugin=pread
tiny tiny-pread-slot 32 --set transport.plugin=pread --set arch.slot_table=true
pr=$?
tiny tiny-mapped-slot 32 --set transport.plugin=mapped --set arch.slot_table=true
mr=$?
tiny tiny-mapped-host 32 --set transport.plugin=mapped
echo "tiny t=$((SECONDS - T0))"
if [ $pr -ne 0 ] && [ -n "$cs" ]; then
  timeout 90 "$cs" --tool memcheck --print-limit 10 "$m" $(tiny_args) --max-tokens 3 --set transport.plugin=pread \
    --set arch.slot_table=true > "$o/sanitize-tiny.log" 2>&1
  grep -m 30 -E "Invalid|at 0x|by thread|Address|=========|error" "$o/sanitize-tiny.log" | head -30
fi
if [ $mr -eq 124 ] && [ -n "$cg" ]; then  # a hang: where the host waits
  "$m" $(tiny_args) --max-tokens 32 --set transport.plugin=mapped --set arch.slot_table=true > "$o/hang.log" 2>&1 &
  pid=$!
  sleep 8
  timeout 40 "$cg" -p $pid -batch -ex "info threads" -ex "thread apply all bt 12" > "$o/hang-bt.log" 2>&1
  kill -9 $pid 2>/dev/null
  grep -E "^#|Thread" "$o/hang-bt.log" | head -60
fi
echo "diag t=$((SECONDS - T0))"
"$m" synth --preset flash --layers 4 --seed 7 --out /tmp/flash4 --log-level warn
fl() {
  local name=$1 n=$2; shift 2
  timeout 60 "$m" run --profile configs/default.yaml --model /tmp/flash4 --set device=hip --prompt-ids 11 \
    --max-tokens "$n" --set transport.plugin=mapped \
    --set arch.routing_replay=tests/data/ds4-flash-routing-heldout.trace.xz --set arch.replay_predictions=0 \
    --set generate.ignore_eos=true --stats-json "$o/$name.json" "$@" > "$o/$name.log" 2>&1
  local rc=$?
  echo "$name exit $rc: $(grep -h 'slot table:\|tok/s\|error:' "$o/$name.log" | cut -c1-220 | head -4 | tr '\n' '|')"
  return $rc
}
fl flash-host 256 --set pager.plugin=lru --set pager.budget=10GiB
fl flash-slot 256 --set pager.plugin=lru --set pager.budget=10GiB --set arch.slot_table=true
fr=$?
grep -h "^token ids" "$o"/flash-*.log | sort | uniq -c | cut -c1-60
if [ $fr -ne 0 ] && [ -n "$cs" ]; then
  timeout 200 "$cs" --tool memcheck --print-limit 10 "$m" run --profile configs/default.yaml --model /tmp/flash4 \
    --set device=hip --prompt-ids 11 --max-tokens 2 --set transport.plugin=mapped --set pager.plugin=lru \
    --set pager.budget=10GiB --set arch.routing_replay=tests/data/ds4-flash-routing-heldout.trace.xz \
    --set arch.replay_predictions=0 --set generate.ignore_eos=true --set arch.slot_table=true > "$o/sanitize-flash.log" 2>&1
  grep -m 30 -E "Invalid|at 0x|by thread|Address|=========|error" "$o/sanitize-flash.log" | head -30
  echo "end t=$((SECONDS - T0))"; exit 0
fi
echo "flash t=$((SECONDS - T0))"
# Passed: the focused suites (gate with slot arms), then host vs slot at 90/50/25% and lru-50 run_ahead.
tools/device/focused_suites.sh build-gpu "$o/suites.log" "*slot*,*MappedIds*,*route*" 60
grep -E "ERROR|FAILED|error:" "$o/suites.log" | head -20
total=$(python3 bench/gpu/weights_per_token.py /tmp/flash4 | python3 -c "import json,sys;print(json.load(sys.stdin)['routed_bytes_all'])")
[ -n "$total" ] && [ "$total" != 0 ] || total=$((4 * 256 * 13369344))
for share in 90 50 25; do
  [ $((SECONDS - T0)) -lt 500 ] || break
  b=$((total / 100 * share))
  fl "lru-$share-host" 2048 --set pager.plugin=lru --set "pager.budget=$b"
  fl "lru-$share-slot" 2048 --set pager.plugin=lru --set "pager.budget=$b" --set arch.slot_table=true
done
[ $((SECONDS - T0)) -lt 540 ] && fl lru-50-ahead 2048 --set pager.plugin=lru --set "pager.budget=$((total / 2))" --set arch.run_ahead=true
grep -h "^token ids" "$o"/lru-*.log | sort | uniq -c | cut -c1-60
echo "end t=$((SECONDS - T0))"
