#!/usr/bin/env bash
# The fuzz campaign of issue 20: every file parser's libFuzzer target for ~10M executions, spread
# over all cores, within one deadline. Not part of CI (it needs clang's libFuzzer and many cores).
#
#   tools/fuzz/pack.sh                            # here: build-fuzz -> fuzz-carry/ (binaries + libs)
#   tools/fuzz/campaign.sh fuzz-carry OUT [SECONDS] [RUNS] [--jobs N] [--only T,T] [--corpus-in TAR]
#
# For each target: RUNS executions (default 10,000,000) split over $(nproc) jobs sharing one corpus
# (seeded from the committed seeds), each job also bounded in time so the whole campaign ends within
# SECONDS (default 540): a target gets the time left divided by the targets left, so the fast ones
# leave time to the slow ones. OUT gets summary.txt (executions, time, crashes per target),
# logs.tar.xz (every job's log), crashes.tar (crash, leak and timeout inputs, if any; add each to
# the target's replayed seeds) and corpus.tar.xz (every target's grown corpus).
#
# A campaign may be one of several whose executions add up (a device call is at most 10 minutes):
# --corpus-in takes the corpus.tar.xz of the previous one, so the next starts where it stopped;
# --only names the targets still short; --jobs leaves cores to other work on the same machine.
set -uo pipefail
carry=${1:?carry folder}; out=${2:?output folder}; seconds=${3:-540}; runs=${4:-10000000}
shift $(( $# < 4 ? $# : 4 ))
jobs=$(nproc); only=""; corpus_in=""
while [ $# -gt 0 ]; do
  case $1 in
    --jobs) jobs=${2:?--jobs N}; shift 2 ;;
    --only) only=${2:?--only T,T}; shift 2 ;;
    --corpus-in) corpus_in=${2:?--corpus-in TAR}; shift 2 ;;
    *) echo "campaign.sh: unknown argument $1 (expected --jobs, --only or --corpus-in)" >&2; exit 2 ;;
  esac
done
deadline=$((SECONDS + seconds))
carry=$(cd "$carry" && pwd); mkdir -p "$out"; out=$(cd "$out" && pwd)
export LD_LIBRARY_PATH="$carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
if [ -n "$corpus_in" ]; then
  mkdir -p "$work/previous" && tar -C "$work/previous" -xJf "$corpus_in" || { echo "campaign.sh: cannot unpack $corpus_in" >&2; exit 1; }
fi
mapfile -t targets < <(cd "$carry/seeds" && ls)
if [ -n "$only" ]; then
  IFS=, read -r -a wanted <<< "$only"
  for t in "${wanted[@]}"; do [ -d "$carry/seeds/$t" ] || { echo "campaign.sh: no target $t in $carry/seeds" >&2; exit 2; }; done
  targets=("${wanted[@]}")
fi
printf '%-22s %12s %8s %8s %s\n' target executions seconds crashes note > "$out/summary.txt"
left=${#targets[@]}
for t in "${targets[@]}"; do
  budget=$(( (deadline - SECONDS) / left )); left=$((left - 1))
  [ "$budget" -ge 5 ] || budget=5
  dir="$work/$t"; mkdir -p "$dir/corpus" "$dir/artifacts"
  [ -d "$work/previous/corpus/$t" ] && cp -r "$work/previous/corpus/$t/." "$dir/corpus/"
  start=$SECONDS
  (cd "$dir" && "$carry/bin/fuzz-$t" -jobs="$jobs" -workers="$jobs" -runs=$((runs / jobs)) \
      -max_total_time="$budget" -print_final_stats=1 -artifact_prefix="$dir/artifacts/" -rss_limit_mb=2048 \
      -timeout=10 corpus "$carry/seeds/$t" > /dev/null 2>&1)
  took=$((SECONDS - start))
  executed=$(cat "$dir"/fuzz-*.log 2>/dev/null | sed -n 's/^stat::number_of_executed_units: *//p' | awk '{s += $1} END {print s + 0}')
  crashes=$(find "$dir/artifacts" -type f | wc -l)
  note=""; [ "$executed" -ge "$runs" ] || note="short of $runs (time bound ${budget} s)"
  printf '%-22s %12d %8d %8d %s\n' "$t" "$executed" "$took" "$crashes" "$note" >> "$out/summary.txt"
  mkdir -p "$work/logs/$t"; cp "$dir"/fuzz-*.log "$work/logs/$t/" 2>/dev/null
  [ "$crashes" -eq 0 ] || { mkdir -p "$work/crashes/$t"; cp "$dir"/artifacts/* "$work/crashes/$t/"; }
  mkdir -p "$work/corpus" && mv "$dir/corpus" "$work/corpus/$t"
done
tar -C "$work" -cJf "$out/corpus.tar.xz" corpus
tar -C "$work" -cJf "$out/logs.tar.xz" logs
[ -d "$work/crashes" ] && tar -C "$work" -cf "$out/crashes.tar" crashes
{ echo "machine: $(nproc) cores, $(uname -srm); date: $(date -u +%Y-%m-%dT%H:%MZ)"; echo "jobs per target: $jobs"; } >> "$out/summary.txt"
cat "$out/summary.txt"
