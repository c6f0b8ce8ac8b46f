# What the GPU decode benchmarks share (sourced by flash-decode.sh and replay-decode.sh): the model,
# prepared and measured once, and one `moepage run` per arm with its summary line. The caller sets
# build, out, model, tokens and prompt, and may set the array arm_args (added to every run).
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export LD_LIBRARY_PATH="$build/carry-lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
moepage="$build/bin/moepage"
arm_args=()
root=$(cd "$here/../.." && pwd)
mkdir -p "$out"

# replay_arms [TRACE] [--set k=v]...: every arm routes as TRACE says (arch.routing_replay; default:
# the committed held-out 256-expert trace) from one prompt token, so every later position is a
# single-token step as in the trace. Sets trace, prompt and arm_args (the extra words appended).
replay_arms() {
  trace=${1:-$root/tests/data/ds4-flash-routing-heldout.trace.xz}
  shift
  prompt=11
  arm_args=(--set arch.plugin=deepseek4 --set "arch.routing_replay=$trace" --set generate.ignore_eos=true "$@")
}

# prepare_model LAYERS THREADS: synthesizes the flash preset with LAYERS layers into $model when it
# holds no config.json; writes OUT/weights.json, warms the page cache (the paged arms read from
# memory) and measures OUT/bandwidth.json with THREADS (comma separated) reader threads; sets
# expert_total, the routed experts' bytes.
prepare_model() {
  local layers=$1 threads=$2
  if [ ! -f "$model/config.json" ]; then
    local start=$SECONDS
    "$moepage" synth --preset flash --layers "$layers" --seed 7 --out "$model" --log-level warn || exit 1
    echo "synth: $((SECONDS - start)) s" | tee -a "$out/summary.txt"
  fi
  du -sb "$model" | tee -a "$out/summary.txt"
  python3 "$here/weights_per_token.py" "$model" > "$out/weights.json"
  cat "$model"/*.safetensors > /dev/null
  local shard
  shard=$(ls -S "$model"/*.safetensors | head -1)
  "$build/bin/gpu_bandwidth" --file "$shard" --threads "$threads" > "$out/bandwidth.json" 2> "$out/bandwidth.log"
  expert_total=$(python3 -c "import json; print(json.load(open('$out/weights.json'))['routed_bytes_all'])")
}

# run_arm NAME [--set k=v]...: one run on the GPU, its log and statistics in OUT/NAME.*, its summary
# (against the resident arm once that ran) appended to OUT/summary.txt.
run_arm() {
  local name=$1; shift
  echo "== $name" | tee -a "$out/summary.txt"
  "$moepage" run --profile "$here/../../configs/default.yaml" --model "$model" --set device=hip \
    --prompt-ids "$prompt" --max-tokens "$tokens" "${arm_args[@]}" \
    --stats-json "$out/$name.json" "$@" > "$out/$name.log" 2>&1
  echo "exit $?" >> "$out/$name.log"
  local ref=(); [ -f "$out/resident.json" ] && [ "$name" != resident ] && ref=("$out/resident.json")
  python3 "$here/summarize_arm.py" "$out/$name.json" "$out/weights.json" "$out/bandwidth.json" "${ref[@]}" | tee -a "$out/summary.txt"
}

# rank_arms: sets library (the --set naming the NCCL that tools/device/find_nccl.sh found, or
# nothing) and async (the pinned-async transport of the paged arms), and logs what was found.
rank_arms() {
  local nccl
  nccl=$(bash "$root/tools/device/find_nccl.sh")
  library=(); [ -n "$nccl" ] && library=(--set "parallel.collective_library=$nccl")
  echo "GPUs: $(nvidia-smi -L | wc -l); NCCL: ${nccl:-none found}" | tee -a "$out/summary.txt"
  async=(--set transport.plugin=pinned-async --set transport.threads=8 --set transport.staging=64MiB
    --set transport.queue_depth=32)
}

# collective_share ARM: a ranks arm's all-reduces (stats-json run.collective_*) and their share of
# the run's prefill and decode seconds.
collective_share() {
  python3 -c "import json; r = json.load(open('$out/$1.json'))['run']
s = r.get('collective_seconds', 0); n = r.get('collective_calls', 0)
print(json.dumps({'collective_calls': n, 'collective_seconds': s,
  'collective_share': round(s / max(1e-12, r['prefill_seconds'] + r['decode_seconds']), 4),
  'collective_us_per_call': round(1e6 * s / max(1, n), 2)}))" | tee -a "$out/summary.txt"
}

# traced_arm NAME [--set k=v]...: run_arm that also writes the run's access trace to OUT/NAME.trace
# (each token's own bound, paged_bound.py).
traced_arm() { local name=$1; shift; run_arm "$name" "$@" --trace "$out/$name.trace"; }

# grid_report: the miss paths measured alone (gpu_bandwidth --paths 1 on the model's largest shard),
# every paged arm of OUT against its bounds (paged_bound.py) and one table of them all
# (grid_table.py): OUT/{paths.json, bound.txt, grid.md}.
grid_report() {
  local shard
  shard=$(ls -S "$model"/*.safetensors | head -1)
  "$build/bin/gpu_bandwidth" --file "$shard" --threads 8 --reps 3 --paths 1 > "$out/paths.json" 2> "$out/paths.log"
  python3 "$here/paged_bound.py" "$out" > "$out/bound.txt"
  python3 "$here/grid_table.py" "$out" | tee "$out/grid.md"
}

# Neutrality: every arm must print the same token ids.
report_neutrality() {
  echo "distinct token-id lines over all arms (1 = neutral): $(grep -h '^token ids:' "$out"/*.log | sort -u | wc -l)" \
    | tee -a "$out/summary.txt"
}
