#!/usr/bin/env bash
# Prompts (and so decode batches of a few sequences) under several values of one token threshold,
# in one run on the synthesized Flash slice: which token count should take a path. OPTION names the
# threshold (default arch.matrix_min_tokens, the matrix cores; arch.library_min_tokens: the vendor
# BLAS; arch.matrix_min_expert_tokens). One table: prefill tok/s per prompt length and value (the
# median of REPS processes), and whether every value printed the same ids for a length.
#   [OPTION=arch.k] bench/gpu/min-tokens-sweep.sh BUILD OUT [LENGTHS] [VALUES]
# LENGTHS default 2,4,8,16,32; VALUES default 2,4,8,16. Environment: REPS (default 2), LAYERS and
# FLASH_MODEL_DIR as prefill-vs-hf.sh.
set -uo pipefail
[ $# -ge 2 ] || { sed -n '2,8p' "$0"; exit 2; }
build=$1 out=$2 lengths=${3:-2,4,8,16,32} values=${4:-2,4,8,16}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
IFS=, read -ra vs <<< "$values"
for v in "${vs[@]}"; do
  MOEPAGE_SET="--set ${OPTION:-arch.matrix_min_tokens}=$v" HF=0 PROFILE_LEN= REPS=${REPS:-2} \
    "$here/prefill-vs-hf.sh" "$build" "$out/m$v" "$lengths" 4096 > "$out/m$v.txt" 2>&1
done
python3 - "$out" "$values" "$lengths" "${OPTION:-arch.matrix_min_tokens}" <<'PY' | tee "$out/summary.txt"
import csv, pathlib, re, statistics, sys
out, values, lengths = pathlib.Path(sys.argv[1]), sys.argv[2].split(","), sys.argv[3].split(",")
option = sys.argv[4].split(".")[-1]
print("prompt," + ",".join(f"{option}_{v}" for v in values) + ",same_ids")
for n in lengths:
    cells, ids = [], set()
    for v in values:
        rates = [float(r["prefill_tok_s"]) for r in csv.DictReader(open(out / f"m{v}" / "table.csv"))
                 if r["prompt"] == n and r["prefill_tok_s"] != "failed"]
        cells.append(f"{statistics.median(rates):.1f}" if rates else "failed")
        for log in (out / f"m{v}").glob(f"moepage-b4096-p{n}-r*.log"):
            m = re.search(r"^token ids: (.*)$", log.read_text(), re.M)
            ids.add(m.group(1) if m else "none")
    print(f"{n}," + ",".join(cells) + f",{'yes' if len(ids) == 1 else 'NO'}")
PY
