#!/usr/bin/env bash
# The GPU's clocks, power and throttle reasons while moepage prefills the same prompt many times
# back to back: whether a long prefill runs at the clocks its per-kernel profile saw (ncu times
# each kernel alone, on an idle, cool GPU).
#   bench/gpu/prefill-clocks.sh BUILD OUT [PROMPT_LEN] [PREFILLS]
# Defaults: 4,096 tokens, 30 prefills. Env FLASH_MODEL_DIR (default /tmp/flash4; synthesized with 4
# layers when absent), SAMPLE_MS (nvidia-smi's interval, default 20).
set -uo pipefail
build=$(cd "$1" && pwd); out=$2; len=${3:-4096}; prefills=${4:-30}
mkdir -p "$out"
model=${FLASH_MODEL_DIR:-/tmp/flash4}
. "$(dirname "$0")/flash_prompt.sh"
flash_prompt "$build" "$model" "$len"
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,utilization.gpu,clocks_throttle_reasons.active \
  --format=csv,nounits -lms "${SAMPLE_MS:-20}" > "$out/clocks.csv" 2> "$out/clocks.log" &
smi=$!
sleep 1
"$moepage" run --profile "$(dirname "$0")/../../configs/default.yaml" --model "$model" --set device=hip \
  --set arch.plugin=deepseek4 --set "arch.max_context=$((len + 64))" --set "arch.max_batch=$len" \
  --set "generate.warmup_prefills=$prefills" --set generate.ignore_eos=true --prompt-ids "$ids" --max-tokens 2 \
  > "$out/run.log" 2>&1
echo "exit $?" >> "$out/run.log"
sleep 1
kill "$smi" 2> /dev/null
wait "$smi" 2> /dev/null
# The samples taken while the GPU was busy: their SM clock and power, and the throttle reasons seen.
python3 - "$out/clocks.csv" > "$out/summary.txt" <<'PY'
import csv, statistics, sys
rows = list(csv.reader(open(sys.argv[1])))[1:]
busy = [r for r in rows if len(r) >= 6 and r[4].strip().isdigit() and int(r[4]) >= 50]
if not busy:
    print("no busy samples"); sys.exit(0)
sm = [float(r[1]) for r in busy]; pw = [float(r[3]) for r in busy]
reasons = {}
for r in busy:
    reasons[r[5].strip()] = reasons.get(r[5].strip(), 0) + 1
print(f"busy samples {len(busy)} of {len(rows)}")
print(f"SM clock MHz: median {statistics.median(sm):.0f}, min {min(sm):.0f}, max {max(sm):.0f}")
print(f"power W: median {statistics.median(pw):.0f}, max {max(pw):.0f}")
print("throttle reasons (bitmask: samples):", reasons)
PY
cat "$out/summary.txt"
grep "prefill" "$out/run.log"
