#!/usr/bin/env bash
# Runs on the GPU machine, from the repository root, over the build-gpu that tools/device/build.sh
# made: each stage writes OUT_DIR/<stage>.log, a failing stage does not stop the others, and a
# summary ends the output (exit 1 if any stage failed).
#   tools/device/run_all.sh OUT_DIR [STAGE...]
# Stages (all by default, in this order): gpus device-hip ds4-hip-kernels ds4-hip-forward
# ds4-hip-run bandwidth. A gpu suite build.sh built that is not listed runs too when no stage is
# named. bandwidth reads $BANDWIDTH_FILE, or a 2 GiB file it writes under /tmp.
set -uo pipefail
cd "$(dirname "$0")/../.."
[ $# -ge 1 ] || { sed -n '5,8p' "$0"; exit 2; }
out=$1; shift
mkdir -p "$out"
dir=build-gpu
[ -d "$dir/bin" ] || { echo "run_all.sh: no $dir/bin here; run tools/device/build.sh first and carry $dir" >&2; exit 2; }

export LD_LIBRARY_PATH="$PWD/$dir/carry-lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
for cuda_lib in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
  [ -d "$cuda_lib" ] && LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$cuda_lib"
done

# The test binaries find fixtures, the plugin folder and bin/moepage through the environment
# ctest would set: here, this checkout and its build-gpu.
. tools/device/test_env.sh "$dir"

stage_gpus() { nvidia-smi -L && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv; }
stage_suite() {  # a doctest binary; its own summary line ends the log
  local bin="$dir/bin/$1"
  [ -x "$bin" ] || { echo "$bin was not built (is its suite in the tree?)"; return 1; }
  "$bin" --duration=true
}
stage_bandwidth() {
  local file=${BANDWIDTH_FILE:-}
  if [ -z "$file" ]; then
    file=/tmp/moepage-bandwidth.bin
    [ -f "$file" ] || dd if=/dev/zero of="$file" bs=4M count=512 status=none
  fi
  "$dir/bin/gpu_bandwidth" --file "$file" | tee "$out/bandwidth.json"
}

default_stages=(gpus device-hip ds4-hip-kernels ds4-hip-forward ds4-hip-run bandwidth)
if [ $# -gt 0 ]; then
  stages=("$@")
else
  stages=("${default_stages[@]}")
  # Any other gpu suite that was built (a suite added later) runs before the bandwidth stage.
  for bin in "$dir"/bin/*; do
    name=$(basename "$bin")
    case " ${default_stages[*]} gpu_bandwidth moepage ds4-hip-bench " in *" $name "*) continue ;; esac
    stages=("${stages[@]:0:${#stages[@]}-1}" "$name" bandwidth)
  done
fi

declare -A result seconds
for s in "${stages[@]}"; do
  start=$SECONDS
  echo "== $s"
  case $s in
    gpus) stage_gpus >"$out/$s.log" 2>&1 ;;
    bandwidth) stage_bandwidth >"$out/$s.log" 2>&1 ;;
    *) stage_suite "$s" >"$out/$s.log" 2>&1 ;;
  esac
  rc=$?
  seconds[$s]=$((SECONDS - start))
  if [ $rc -eq 0 ]; then result[$s]=ok; else result[$s]="FAILED (exit $rc)"; fi
  tail -n 3 "$out/$s.log"
done

echo
echo "summary ($out):"
failed=0
for s in "${stages[@]}"; do
  printf '  %-18s %-18s %4ss  %s\n' "$s" "${result[$s]}" "${seconds[$s]}" "$out/$s.log"
  [ "${result[$s]}" = ok ] || failed=1
done
exit $failed
