#!/usr/bin/env bash
# Prefill and decode of moepage and of HF transformers on the same GPU, in one run, at the geometry
# of a synthesized DeepSeek-V4-Flash slice (default 4 layers: 2 sliding, 1 CSA, 1 HCA; 256 FP4
# experts per layer, every one resident on the GPU). Writes the two sides and their ratio.
#
#   bench/gpu/prefill-vs-hf.sh BUILD OUT [LENGTHS] [BATCHES]
# LENGTHS: prompt lengths (default 1024,4096); BATCHES: moepage arch.max_batch values to try
# (default 64,1024; the prompt runs in chunks of that many tokens). BUILD holds bin/moepage,
# lib/moepage/plugins and carry-lib (tools/device/build.sh). Environment: FLASH_MODEL_DIR (default
# /tmp/flash4), LAYERS (default 4), REPS (moepage processes per point, default 2), HF=0 to skip the peer, PROFILE_LEN=N to also time every kernel
# of one N-token prefill with ncu (OUT/kernels-N.txt), MOEPAGE_SET="--set k=v ..." for every
# moepage run (e.g. --set arch.matrix_split=false).
#
# moepage: `moepage run` with one unmeasured prefill of the same prompt first
# (generate.warmup_prefills), then the measured one; two processes per point. HF: one forward of
# the prompt (no cache), the median of 3 after a warm-up (hf_side_by_side.py); its weights are
# random bf16, ours are the checkpoint's FP8 dense and FP4 experts.
set -uo pipefail
build=$(cd "$1" && pwd); out=$2; lengths=${3:-1024,4096}; batches=${4:-64,1024}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
model=${FLASH_MODEL_DIR:-/tmp/flash4}
layers=${LAYERS:-4}
export LD_LIBRARY_PATH="$build/carry-lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
moepage="$build/bin/moepage"
summary="$out/summary.txt"
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } > "$summary"
if [ ! -f "$model/config.json" ]; then
  "$moepage" synth --preset flash --layers "$layers" --seed 7 --out "$model" --log-level warn || exit 1
fi
cat "$model"/*.safetensors > /dev/null
vocab=$(python3 -c "import json, sys; print(json.load(open(sys.argv[1]))['vocab_size'])" "$model/config.json")
ids() { python3 -c "import sys; n, v = int(sys.argv[1]), int(sys.argv[2]); print(','.join(str((i*7919+17)%v) for i in range(n)))" "$1" "$vocab"; }
max_len=$(echo "$lengths" | tr ',' '\n' | sort -n | tail -1)

IFS=, read -ra lens <<< "$lengths"
IFS=, read -ra bs <<< "$batches"
echo "side,arm,prompt,prefill_tok_s,decode_tok_s" > "$out/table.csv"
[ "${MOEPAGE:-1}" != 0 ] || lens=()
for n in "${lens[@]}"; do
  prompt=$(ids "$n")
  for b in "${bs[@]}"; do
    for rep in $(seq 1 "${REPS:-2}"); do
      name="moepage-b$b-p$n-r$rep"
      timeout "${RUN_TIMEOUT:-300}" "$moepage" run --profile "$here/../../configs/default.yaml" --model "$model" --set device=hip \
        --set arch.plugin=deepseek4 --set "arch.max_context=$((max_len + 64))" --set "arch.max_batch=$b" \
        --set generate.warmup_prefills=1 --set generate.ignore_eos=true ${MOEPAGE_SET:-} \
        --prompt-ids "$prompt" --max-tokens 32 --stats-json "$out/$name.json" > "$out/$name.log" 2>&1
      echo "exit $?" >> "$out/$name.log"
      python3 - "$out/$name.json" "$n" "b$b" >> "$out/table.csv" <<'EOF'
import json, sys
try:
    r = json.load(open(sys.argv[1]))["run"]
    p = float(sys.argv[2]) / r["prefill_seconds"]
    d = (r["generated_tokens"] - 1) / r["decode_seconds"] if r.get("decode_seconds") else 0
    print(f"moepage,{sys.argv[3]},{sys.argv[2]},{p:.1f},{d:.1f}")
except Exception as e:  # a failed run: its log says why
    print(f"moepage,{sys.argv[3]},{sys.argv[2]},failed,failed")
EOF
    done
  done
done
if [ "${HF:-1}" != 0 ]; then
  timeout "${HF_TIMEOUT:-300}" python3 "$here/hf_side_by_side.py" "$model" --prefill "128,$lengths" --decode 32 > "$out/hf.json" 2> "$out/hf.log"
  echo "exit $?" >> "$out/hf.log"
  python3 - "$out/hf.json" >> "$out/table.csv" <<'EOF'
import json, sys
try:
    r = json.load(open(sys.argv[1]))
    for n, v in r["prefill"].items():
        print(f"hf,{r['setup'].get('experts')},{n},{v},{r.get('decode_tok_s', '')}")
except Exception:
    print("hf,failed,,,")
EOF
fi
if [ -n "${PROFILE_LEN:-}" ]; then
  ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
  b=$(echo "$batches" | tr ',' '\n' | sort -n | tail -1)
  timeout "${PROFILE_TIMEOUT:-300}" "$ncu" --clock-control none --cache-control none --csv --metrics gpu__time_duration.sum \
    --log-file "$out/kernels-$PROFILE_LEN.csv" \
    "$moepage" run --profile "$here/../../configs/default.yaml" --model "$model" --set device=hip \
    --set arch.plugin=deepseek4 --set "arch.max_context=$((PROFILE_LEN + 64))" --set "arch.max_batch=$b" \
    ${MOEPAGE_SET:-} --prompt-ids "$(ids "$PROFILE_LEN")" --max-tokens 1 > "$out/kernels-run.log" 2>&1
  python3 "$here/../../tools/device/ncu_table.py" "$out/kernels-$PROFILE_LEN.csv" > "$out/kernels-$PROFILE_LEN.txt" 2>&1
  head -40 "$out/kernels-$PROFILE_LEN.txt"
fi
python3 - "$out/table.csv" <<'EOF' | tee -a "$summary"
import collections, csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
best = collections.defaultdict(list)
for r in rows:
    try:
        best[(r["side"], r["prompt"])].append((float(r["prefill_tok_s"]), r["arm"]))
    except ValueError:
        pass
print("| prompt | moepage prefill tok/s (best arm) | HF prefill tok/s | moepage / HF |")
print("|---:|---:|---:|---:|")
for n in sorted({int(p) for _, p in best}):
    m = max(best.get(("moepage", str(n)), [(0, "-")]))
    h = max(best.get(("hf", str(n)), [(0, "-")]))
    ratio = f"{m[0] / h[0]:.2f}x" if m[0] and h[0] else "-"
    print(f"| {n} | {m[0]:.0f} ({m[1]}) | {h[0]:.0f} | {ratio} |")
EOF
cat "$out/table.csv" >> "$summary"
