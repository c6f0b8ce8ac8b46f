#!/usr/bin/env bash
# Paged decode under real routing on the H200 (issue 16): a synthesized DeepSeek-V4-Flash-shaped
# model whose routers are replaced by a recorded trace (arch option routing_replay, a benchmark
# mode: layer i follows trace layer i mod N, position p its token p mod T). Arms: resident; lru at
# 25% and 12.5% of the expert bytes, each without and with the trace's recorded predictions handed
# to the pager (replay_predictions), through pinned-async. The same trace fed to `moepage simulate`
# gives the hit rates the arms should reach (the simulate table is written beside them).
#
#   bench/gpu/replay-decode.sh BUILD OUT MODEL_DIR [TOKENS] [LAYERS] [TRACE]
# BUILD holds bin/moepage, lib/moepage/plugins, bin/gpu_bandwidth and carry-lib (tools/device/build.sh).
# MODEL_DIR is synthesized there when it holds no config.json (LAYERS of the flash preset, 12 by
# default: 3 hash-routed and 9 scored, the layers of the committed 256-expert trace).
# Writes OUT/{bandwidth.json, weights.json, <arm>.json, <arm>.log, simulate.txt, summary.txt}.
set -uo pipefail
build=$(cd "$1" && pwd); out=$2; model=$3; tokens=${4:-256}; layers=${5:-12}
here=$(cd "$(dirname "$0")" && pwd)
threads=8
source "$here/decode_arms.sh"
replay_arms "${6:-}"

prepare_model "$layers" 1,8
quarter=$((expert_total / 4)); eighth=$((expert_total / 8))
async=(--set transport.plugin=pinned-async --set transport.threads=$threads --set transport.staging=64MiB --set transport.queue_depth=32)
run_arm resident
for share in 25:$quarter 12.5:$eighth; do
  name=${share%%:*}; budget=${share#*:}
  run_arm "lru-$name" --set pager.plugin=lru --set pager.budget=$budget --set arch.replay_predictions=0 "${async[@]}"
  run_arm "lru-$name-predict3" --set pager.plugin=lru --set pager.budget=$budget --set arch.replay_predictions=3 "${async[@]}"
  run_arm "lru-$name-predict6" --set pager.plugin=lru --set pager.budget=$budget --set arch.replay_predictions=6 "${async[@]}"
done
# What the simulator expects at the arms' slot counts: of the positions the arms ran (the trace's
# first tokens + 1 tokens, cold start included) and of the whole trace (steady state).
slots=$(python3 -c "import json,sys; print(','.join(str(json.load(open(f))['pager']['slots_per_layer']) for f in sys.argv[1:]))" "$out/lru-25.json" "$out/lru-12.5.json")
xz -dcf "$trace" | awk -v n=$((tokens + 1)) '/^t /{ if (++seen > n) exit } {print}' > "$out/replayed.trace"
policies=lru,lru+prefetch:3,lru+prefetch,belady
{ echo "-- the replayed positions"; "$moepage" simulate --trace "$out/replayed.trace" --slots "$slots" --policies $policies
  echo "-- the whole trace"; "$moepage" simulate --trace "$trace" --slots "$slots" --policies $policies; } > "$out/simulate.txt" 2>&1
cat "$out/simulate.txt" >> "$out/summary.txt"
report_neutrality   # replay keeps the computation deterministic
