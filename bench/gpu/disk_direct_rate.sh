#!/usr/bin/env bash
# The disk's O_DIRECT read rate at several queue depths: for depth D, D `dd iflag=direct` readers
# run at once, each over its own run of BLOCK-sized reads, BYTES in all; one JSON line per depth.
# Each depth reads a region of FILE no other depth touched, so no depth is served from a cache
# the previous one filled. A transport's cold rate is then stated against the best depth (the
# disk's own rate), not against one reader in flight.
#
#   bench/gpu/disk_direct_rate.sh FILE [DEPTHS] [BYTES_PER_DEPTH] [BLOCK] [START]
# DEPTHS comma separated (default 1,4,16,64); BYTES_PER_DEPTH default 2 GiB, or FILE's size over
# the depths' count where that is less; BLOCK default 2 MiB; START: the first depth's region
# begins this many bytes into FILE (default 0; a multiple of BLOCK). FILE must hold START + DEPTHS'
# count x BYTES_PER_DEPTH bytes.
set -euo pipefail
file=$1; depths=${2:-1,4,16,64}; block=${4:-$((2 << 20))}; start=${5:-0}
size=$(stat -c %s "$file")
IFS=, read -r -a list <<< "$depths"
bytes=${3:-$((size / ${#list[@]} < (2 << 30) ? size / ${#list[@]} : (2 << 30)))}
need=$((start + ${#list[@]} * bytes))
if [ $((start % block)) -ne 0 ]; then
  echo "disk_direct_rate.sh: START $start is not a multiple of BLOCK $block" >&2
  exit 1
fi
if [ "$size" -lt "$need" ]; then
  echo "disk_direct_rate.sh: $file holds $size bytes, the depths $depths need $need" >&2
  exit 1
fi
base=$start
for d in "${list[@]}"; do
  per=$((bytes / block / d))  # blocks per reader
  [ "$per" -ge 1 ] || { echo "disk_direct_rate.sh: depth $d leaves no block per reader" >&2; exit 1; }
  start=$(date +%s.%N)
  pids=()
  for ((i = 0; i < d; ++i)); do
    dd if="$file" of=/dev/null bs="$block" count="$per" skip=$((base / block + i * per)) iflag=direct \
      status=none &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p"; done
  end=$(date +%s.%N)
  read_bytes=$((per * d * block))
  python3 -c "import json,sys; b,s,e=int(sys.argv[1]),float(sys.argv[2]),float(sys.argv[3]); \
print(json.dumps({'depth': int(sys.argv[4]), 'block': int(sys.argv[5]), 'bytes': b, 'seconds': round(e - s, 3), \
'bytes_per_s': round(b / (e - s))}))" "$read_bytes" "$start" "$end" "$d" "$block"
  base=$((base + bytes))
done
