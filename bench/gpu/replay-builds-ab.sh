#!/usr/bin/env bash
# Paged decode under replayed real routing, two sides of an A/B (issue 16): the 12-layer Flash
# slice, mapped transport, resident, lru and lfru with the trace's recorded proposals (top 3) at
# 12.5%, 25% and 50% of the expert bytes. Each arm runs under BASE, then NEW, REPS times over
# (interleaved, so drift in the machine falls on both). Then the pinned copy rate in 256 KiB,
# 4 MiB and 13 MiB pieces (what one copy per expert part costs against one copy per expert), every
# arm against its bound (paged_bound.py), and one table of NEW / BASE.
#
#   bench/gpu/replay-builds-ab.sh BASE NEW OUT MODEL_DIR [TOKENS] [REPS] [LAYERS]
# BASE and NEW are build folders (bin/moepage, lib/moepage/plugins, carry-lib), each optionally
# followed by a colon and options for every run of that side, so that one build can be compared
# with itself under two option sets: build-gpu:"--set arch.defer_acquire_finish=false". Writes
# OUT/{<arm>-{base,new}-r<i>.json, .log, bandwidth.json, pieces-*.json, weights.json, bound.txt,
# summary.txt}.
set -uo pipefail
# side SPEC: the folder of SPEC (before any colon), then its options word by word.
side_dir() { (cd "${1%%:*}" && pwd); }
side_sets() { [[ $1 == *:* ]] && printf '%s' "${1#*:}"; }
base=$(side_dir "$1") && new=$(side_dir "$2") || exit 1
read -r -a base_sets <<< "$(side_sets "$1")"
read -r -a new_sets <<< "$(side_sets "$2")"
out=$3; model=$4; tokens=${5:-256}; reps=${6:-2}; layers=${7:-12}
build=$base
here=$(cd "$(dirname "$0")" && pwd)
source "$here/decode_arms.sh"
replay_arms
prepare_model "$layers" 1,8
for piece in 262144 4194304 13369344; do
  "$base/bin/gpu_bandwidth" --piece-bytes "$piece" --threads 1 --reps 3 > "$out/pieces-$piece.json" 2>> "$out/pieces.log"
  echo "pinned copy in $piece-byte pieces: $(python3 -c "import json
print(round(json.load(open('$out/pieces-$piece.json'))['pinned_to_device']['bytes_per_s'] / 1e9, 2))") GB/s" \
    | tee -a "$out/summary.txt"
done

# arm NAME [--set k=v]...: the arm under BASE then NEW, as NAME-base-rI and NAME-new-rI.
arm() {
  local name=$1; shift
  for which in base new; do
    local dir=$base sets=("${base_sets[@]}")
    [ "$which" = new ] && dir=$new && sets=("${new_sets[@]}")
    moepage="$dir/bin/moepage"
    LD_LIBRARY_PATH="$dir/carry-lib" run_arm "$name-$which-r$rep" "$@" "${sets[@]}"
  done
}

rows=()
for rep in $(seq 1 "$reps"); do
  arm resident
  for share in 12.5:8 25:4 50:2; do
    name=${share%%:*}; budget=$((expert_total / ${share#*:}))
    paged=(--set pager.plugin=lru --set "pager.budget=$budget" --set transport.plugin=mapped)
    arm "lru-$name" "${paged[@]}" --set arch.replay_predictions=0
    arm "lfru-$name-predict3" "${paged[@]}" --set pager.policy=lfru --set arch.replay_predictions=3
  done
done
report_neutrality
# paged_bound.py takes the resident time from resident.json: the first base run's.
cp "$out/resident-base-r1.json" "$out/resident.json"
paged=()
for a in lru-12.5 lfru-12.5-predict3 lru-25 lfru-25-predict3 lru-50 lfru-50-predict3; do
  for rep in $(seq 1 "$reps"); do paged+=("$a-base-r$rep" "$a-new-r$rep"); done
done
python3 "$here/paged_bound.py" "$out" "${paged[@]}" | tee "$out/bound.txt"
for a in resident lru-12.5 lfru-12.5-predict3 lru-25 lfru-25-predict3 lru-50 lfru-50-predict3; do
  for rep in $(seq 1 "$reps"); do rows+=("$a-r$rep=$a-base-r$rep,$a-new-r$rep"); done
done
python3 "$here/arm_ratios.py" "$out" "${rows[@]}" | tee -a "$out/summary.txt"
