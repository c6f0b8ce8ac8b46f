#!/usr/bin/env bash
# Prefill of one build under several option sets and HF transformers' in one run, with each
# moepage batch's timeline (arch.timeline): prefill-vs-hf.sh per arm (REPS processes per point),
# then the peer once, then one table of every arm's tok/s and its ratio to HF.
#
#   bench/gpu/prefill-arms.sh BUILD OUT LENGTHS BATCH NAME="--set k=v ..." [NAME="..."]...
# e.g. bench/gpu/prefill-arms.sh build-gpu OUT 1024,4096 4096 beside="" first="--set arch.prompt_shared_expert=first"
# Environment as prefill-vs-hf.sh (FLASH_MODEL_DIR, LAYERS, REPS, HF=0 to skip the peer).
# OUT/table.md: per arm and length the runs, their median and median / HF; OUT/timelines.txt: each
# run's last timeline line, the measured prefill's last chunk (its only one where BATCH >= the length).
set -uo pipefail
build=$1; out=$2; lengths=$3; batch=$4; shift 4
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
arms=()
for spec in "$@"; do
  name=${spec%%=*}; set_args=${spec#*=}
  arms+=("$name")
  MOEPAGE_SET="--set arch.timeline=true $set_args" HF=0 "$here/prefill-vs-hf.sh" "$build" "$out/$name" "$lengths" "$batch" \
    > "$out/$name.out" 2>&1
done
if [ "${HF:-1}" != 0 ]; then
  MOEPAGE=0 "$here/prefill-vs-hf.sh" "$build" "$out/hf" "$lengths" "$batch" > "$out/hf.out" 2>&1
fi
for name in "${arms[@]}"; do
  for log in "$out/$name"/moepage-*.log; do
    [ -f "$log" ] || continue
    # A run's first prefill warms up; the measured one comes second, so its last chunk's line is the last.
    echo "$name $(basename "$log" .log): $(grep -h 'prompt batch' "$log" | sed -n '$p' | sed 's/.*deepseek4: //')"
  done
done > "$out/timelines.txt"
python3 - "$out" "${arms[@]}" <<'PY' | tee "$out/table.md"
import csv, os, statistics, sys
out, arms = sys.argv[1], sys.argv[2:]
def runs(arm, side):
    path = os.path.join(out, arm, "table.csv")
    got = {}
    for r in (csv.DictReader(open(path)) if os.path.exists(path) else []):
        if r["side"] != side: continue
        try: got.setdefault(int(r["prompt"]), []).append(float(r["prefill_tok_s"]))
        except ValueError: pass
    return got
hf = runs("hf", "hf")
print("| arm | prompt | moepage prefill tok/s (runs) | median | HF tok/s | median / HF |")
print("|---|---:|---|---:|---:|---:|")
for arm in arms:
    for n, v in sorted(runs(arm, "moepage").items()):
        m = statistics.median(v)
        h = max(hf.get(n, [0]))
        ratio = f"{m / h:.2f}x" if h else "-"
        print(f"| {arm} | {n} | {' / '.join(f'{x:,.0f}' for x in v)} | {m:,.0f} | {h:,.0f} | {ratio} |")
PY
