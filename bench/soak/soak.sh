#!/usr/bin/env bash
# Soak benchmark: TOKENS decode tokens of models/ds4-debian-tiny under a thrashing expert budget
# (6 slots per layer for top-6 routing), sampled at temperature 1 with a fixed seed (greedy text
# of the tiny model loops and keeps hitting the same experts), run twice with the lru pager:
#   clean    the pinned-async transport
#   faulted  the fault-inject transport failing every FAIL_EVERY-th read when it is a prefetch
#            (a failed prefetch is advice lost: the demand read that follows fetches the expert)
# Each run's resident memory (VmRSS) and open descriptors are sampled once a second; the summary
# gives them after the first 10% of the samples (warm-up) and whether the two runs' token ids match.
#   bench/soak/soak.sh BUILD_DIR OUT_DIR [TOKENS] [FAIL_EVERY]
set -euo pipefail
if [[ $# -lt 2 ]]; then
  echo "usage: bench/soak/soak.sh BUILD_DIR OUT_DIR [TOKENS] [FAIL_EVERY]" >&2
  exit 2
fi
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
moepage="$(cd "$1" && pwd)/bin/moepage"
out="$2"
tokens="${3:-10000}"
fail_every="${4:-200}"
mkdir -p "$out"
cd "$root"

common=(run --profile configs/lru.yaml --model models/ds4-debian-tiny --set pager.budget=1300KiB
        --set "arch.max_context=$((tokens + 16))" --set generate.ignore_eos=true --prompt-ids 5,6,7
        --set generate.temperature=1 --set generate.seed=7
        --max-tokens "$tokens" --log-level info)

# soak_run NAME ARGS...: runs moepage in the background, samples it, leaves NAME.{out,err,samples.csv}
soak_run() {
  local name=$1; shift
  local start=$SECONDS
  "$moepage" "${common[@]}" "$@" --stats-json "$out/$name.stats.json" >"$out/$name.out" 2>"$out/$name.err" &
  local pid=$!
  echo "seconds,rss_kib,fds" >"$out/$name.samples.csv"
  while kill -0 "$pid" 2>/dev/null; do
    local rss fds
    rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status" 2>/dev/null || true)
    fds=$(find "/proc/$pid/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l || true)
    [[ -n "$rss" ]] && echo "$((SECONDS - start)),$rss,$fds" >>"$out/$name.samples.csv"
    sleep 1
  done
  wait "$pid"
  echo "$name: exit 0 after $((SECONDS - start)) s"
}

soak_run clean --set transport.plugin=pinned-async
soak_run faulted --set transport.plugin=fault-inject --set "transport.fail_every=$fail_every" \
  --set transport.reads=prefetch

python3 - "$out" <<'PY'
import csv, json, sys
out = sys.argv[1]
def ids(name):
    for line in open(f"{out}/{name}.out"):
        if line.startswith("token ids:"):
            return line.split()[2:]
    raise SystemExit(f"{name}: no token ids line")
lines = []
for name in ("clean", "faulted"):
    rows = list(csv.DictReader(open(f"{out}/{name}.samples.csv")))
    steady = rows[len(rows) // 10:] or rows
    rss = [int(r["rss_kib"]) for r in steady]
    fds = [int(r["fds"]) for r in steady]
    stats = json.load(open(f"{out}/{name}.stats.json"))
    lines.append(f"{name}: {len(ids(name))} tokens, {stats['run']['decode_seconds']:.1f} s decode; "
                 f"{len(rows)} samples, after warm-up RSS {min(rss)}-{max(rss)} KiB (first {rss[0]}, last {rss[-1]}), "
                 f"open fds {min(fds)}-{max(fds)}; expert accesses {stats['pager']['accesses']}, "
                 f"hit rate {100 * stats['pager']['hit_rate']:.1f}%, misses {stats['pager']['misses']}, "
                 f"prefetch issued {stats['pager']['prefetch_issued']}")
faults = sum("a prefetch read failed" in line for line in open(f"{out}/faulted.err"))
lines.append(f"faulted: {faults} prefetch reads failed by injection (each logged by the pager)")
lines.append("ids identical: " + ("yes" if ids("clean") == ids("faulted") else "NO"))
open(f"{out}/summary.txt", "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
# The faulted run logs one warning per failed prefetch: kept, compressed.
xz -9f "$out/faulted.err"
