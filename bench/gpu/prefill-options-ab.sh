#!/usr/bin/env bash
# Prefill of one build under two option sets, and HF transformers, in one run: prefill-vs-hf.sh
# for arm A (options SET_A), arm B (SET_B), each REPS processes per point, then the peer once; one
# table with both arms' ratios to HF.
#
#   SET_A="--set k=v ..." SET_B="--set k=v ..." bench/gpu/prefill-options-ab.sh BUILD OUT [LENGTHS] [BATCHES]
# Environment as prefill-vs-hf.sh (FLASH_MODEL_DIR, LAYERS, REPS, HF=0 to skip the peer);
# PROFILE_LEN=N times every kernel of one N-token prefill under each arm (OUT/{a,b}/kernels-N.txt).
set -uo pipefail
build=$1; out=$2; lengths=${3:-1024,4096}; batches=${4:-4096}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
MOEPAGE_SET="${SET_A:-}" HF=0 "$here/prefill-vs-hf.sh" "$build" "$out/a" "$lengths" "$batches"
MOEPAGE_SET="${SET_B:-}" HF=0 "$here/prefill-vs-hf.sh" "$build" "$out/b" "$lengths" "$batches"
if [ "${HF:-1}" != 0 ]; then
  MOEPAGE=0 PROFILE_LEN= "$here/prefill-vs-hf.sh" "$build" "$out/hf" "$lengths" "$batches"
fi
python3 - "$out" "${SET_A:-defaults}" "${SET_B:-defaults}" <<'EOF' | tee "$out/summary.txt"
import csv, statistics, sys, os
out, set_a, set_b = sys.argv[1:4]
def table(arm, side):
    path = os.path.join(out, arm, "table.csv")
    rows = list(csv.DictReader(open(path))) if os.path.exists(path) else []
    got = {}
    for r in rows:
        if r["side"] != side: continue
        try: got.setdefault(int(r["prompt"]), []).append(float(r["prefill_tok_s"]))
        except ValueError: pass
    return got
a, b, hf = table("a", "moepage"), table("b", "moepage"), table("hf", "hf")
print(f"A: {set_a}\nB: {set_b}\n")
print("| prompt | A tok/s (runs) | B tok/s (runs) | B / A | HF tok/s | A / HF | B / HF |")
print("|---:|---:|---:|---:|---:|---:|---:|")
for n in sorted(set(a) | set(b)):
    ma = statistics.median(a[n]) if a.get(n) else 0
    mb = statistics.median(b[n]) if b.get(n) else 0
    h = max(hf[n]) if hf.get(n) else 0
    r = lambda x, y: f"{x / y:.2f}x" if x and y else "-"
    runs = lambda v: " / ".join(f"{x:.0f}" for x in v)
    print(f"| {n} | {ma:.0f} ({runs(a.get(n, []))}) | {mb:.0f} ({runs(b.get(n, []))}) | {r(mb, ma)} | {h:.0f} | {r(ma, h)} | {r(mb, h)} |")
EOF
# Whether the two option sets generate the same ids (the 32 decoded after each prompt).
for n in ${lengths//,/ }; do
  echo "prompt $n: distinct token-id lines over both arms: $(cat "$out"/a/moepage-*-p"$n"-r*.log "$out"/b/moepage-*-p"$n"-r*.log 2>/dev/null | grep '^token ids:' | sort -u | wc -l)" | tee -a "$out/summary.txt"
done
