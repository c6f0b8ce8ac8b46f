#!/usr/bin/env bash
# NOT RUN (written 2026-12-07, ninth session: the device time ran out in failed starts). The slot
# table's reply riding a device-side wait (98790e0) in the least device time: its GPU
# cases, the tiny model's ids over three transports, then on the 12-layer Flash slice (replayed
# routing, mapped transport, 256 tokens) lru and lfru + top 3 at 50% of the expert bytes, slot table
# and host path interleaved over two repetitions; lru at 90% the same way.
set -uo pipefail
o=${OUT:?}
T0=$SECONDS
bash tools/device/call_start.sh "$o"
export LD_LIBRARY_PATH="$PWD/build-gpu/carry-lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
m=build-gpu/bin/moepage
"$m" synth --preset flash --layers 12 --seed 7 --out /tmp/flash12 --log-level warn > "$o/synth.log" 2>&1 &
synth=$!
( . tools/device/test_env.sh build-gpu; timeout 60 build-gpu/bin/ds4-hip-kernels -tc="*slot*" ) > "$o/suites.log" 2>&1
grep -E "ERROR|FAILED|test cases:" "$o/suites.log" | head -12
tiny() {
  local name=$1; shift
  timeout 30 "$m" run --profile configs/default.yaml --model models/ds4-debian-tiny --set device=hip --prompt-ids 11 \
    --set pager.plugin=lru --set pager.budget=4MiB --max-tokens 32 "$@" > "$o/$name.log" 2>&1
  echo "$name exit $? $(grep -h 'slot table:\|error' "$o/$name.log" | cut -c1-200 | head -2 | tr '\n' '|')"
}
tiny tiny-mapped-slot --set transport.plugin=mapped --set arch.slot_table=true
tiny tiny-pread-slot --set transport.plugin=pread --set arch.slot_table=true
tiny tiny-pinned-slot --set transport.plugin=pinned-async --set arch.slot_table=true
tiny tiny-mapped-host --set transport.plugin=mapped
grep -h "^token ids" "$o"/tiny-*.log | sort | uniq -c | cut -c1-60
wait $synth; echo "synth rc=$? t=$((SECONDS - T0))"
cat /tmp/flash12/*.safetensors > /dev/null
routed=$(python3 bench/gpu/weights_per_token.py /tmp/flash12 | python3 -c "import json, sys; print(json.load(sys.stdin)['routed_bytes_all'])")
half=$((routed / 2)) most=$((routed * 9 / 10))
fl() {
  local name=$1; shift
  timeout 40 "$m" run --profile configs/default.yaml --model /tmp/flash12 --set device=hip --prompt-ids 11 \
    --max-tokens "${TOKENS:-256}" --set transport.plugin=mapped --set pager.plugin=lru --set "pager.budget=${BUDGET:-$half}" \
    --set arch.routing_replay=tests/data/ds4-flash-routing-heldout.trace.xz --set generate.ignore_eos=true \
    --stats-json "$o/$name.json" "$@" > "$o/$name.log" 2>&1
  echo "$name exit $? $(grep -h 'decode .* tok/s\|slot table:\|error' "$o/$name.log" | sed 's/.*decode/decode/' | cut -c1-120 | tr '\n' '|')"
}
for r in 1 2; do
  fl lru-slot-r$r --set arch.replay_predictions=0 --set arch.slot_table=true
  fl lru-host-r$r --set arch.replay_predictions=0
  fl top3-slot-r$r --set pager.policy=lfru --set arch.replay_predictions=3 --set arch.slot_table=true
  fl top3-host-r$r --set pager.policy=lfru --set arch.replay_predictions=3
  # 90% of the expert bytes, where most layer steps hit (what the slot table is for), over 1,024
  # tokens: 256 would mostly measure the pools filling.
  TOKENS=1024 BUDGET=$most fl lru90-slot-r$r --set arch.replay_predictions=0 --set arch.slot_table=true
  TOKENS=1024 BUDGET=$most fl lru90-host-r$r --set arch.replay_predictions=0
done
grep -h "^token ids" "$o"/*-r?.log | sort | uniq -c | wc -l | sed 's/^/distinct id lines over the Flash runs: /'
mkdir -p "$o/logs" && mv "$o"/*.log "$o"/*.json "$o"/gpu.txt "$o/logs/" 2>/dev/null
tools/device/pack_out.sh "$o/logs" logs
echo "end t=$((SECONDS - T0))"
