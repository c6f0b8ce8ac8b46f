#!/usr/bin/env bash
# NOT RUN (written 2026-12-08: no device machine was lent that session). Issue 17's resident decode:
# the stream options of 2026-12-08 against the default, interleaved, on the 4- and 12-layer Flash
# slices (256 tokens after a 4-token prompt), then every GPU suite and the neutrality gate. About
# 400 s of device time (synthesizing the 12-layer slice alone took 74 s on an H100). Run from the repository root with build-gpu unpacked (call_start.sh does).
set -uo pipefail
o=${OUT:?}
T0=$SECONDS
bash tools/device/call_start.sh "$o"
export LD_LIBRARY_PATH="$PWD/build-gpu/carry-lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
b=build-gpu
arms=(base=$b ra=$b:"--set arch.run_ahead=true" first=$b:"--set arch.decode_shared_expert=first"
  urgent=$b:"--set arch.decode_shared_expert=urgent" usk=$b:"--set arch.urgent_sinkhorn=true"
  all=$b:"--set arch.run_ahead=true:--set arch.urgent_sinkhorn=true")
for n in 4 12; do
  reps=3; [ "$n" = 12 ] && reps=2
  FLASH_MODEL_DIR=/tmp/flash$n timeout 260 bench/gpu/decode-arms.sh "$o/d$n" 256 "$n" "$reps" "${arms[@]}" > "$o/d$n.log" 2>&1
  echo "decode $n layers rc=$? t=$((SECONDS - T0))"
  grep -h "tok/s\|distinct" "$o/d$n/summary.txt" 2>/dev/null | cut -c1-160
done
if [ $((SECONDS - T0)) -lt 420 ]; then
  timeout $((580 - (SECONDS - T0))) tools/device/run_all.sh "$o/suites" ds4-hip-kernels ds4-hip-forward ds4-hip-run 2>&1 | tail -8
fi
for d in d4 d12 suites; do [ -d "$o/$d" ] && tools/device/pack_out.sh "$o/$d" "$d" > /dev/null; done
echo "end t=$((SECONDS - T0))"
