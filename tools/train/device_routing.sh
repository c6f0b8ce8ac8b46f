#!/usr/bin/env bash
# The GPU-machine side of the real-routing work (tools/train/README.md, "Real routing"). Each
# stage is one device call; run from the repository root there, with the corpus carried as
# out/carry-corpus/{train,heldout}.txt.xz and packages.txt (make it with
# `tools/train/device_routing.sh pack-corpus` here).
#
#   pack-corpus        (this machine) out/corpus -> out/carry-corpus, the xz copies only
#   smoke              a short flash-routing training plus both studies at small sizes (~4 min)
#   tiny-study         adapters, recall table and trace of the committed ds4-debian-tiny
#   flash              the 256-expert model: train.py --preset flash-routing, then the same study
#                      on its checkpoint, in one call of under 10 minutes (a short training)
#   flash-train        the 256-expert model alone, trained for longer (one call, under 10 minutes);
#                      its checkpoint stays on the GPU machine in out/fr
#   flash-study        the study on out/fr's checkpoint; call it right after flash-train, while the
#                      machine is still warm (the checkpoint cannot travel back). Its trace comes
#                      back in parts of 15 MiB: `cat NAME.part* > NAME`.
# Everything a stage writes for the repository lands in $OUT.
set -euo pipefail
stage=${1:?stage}
corpus=out/carry-corpus
tiny=models/ds4-debian-tiny
export PYTHONUNBUFFERED=1

study() {  # study SECONDS MODEL_DIR NAME [extra args]
  local seconds=$1 dir=$2 name=$3; shift 3
  timeout "$seconds" python3 tools/train/routing_study.py --model "$dir" --tokenizer "$tiny/tokenizer.json" \
    --corpus "$corpus" --out "$OUT" --name "$name" "$@" 2>&1 | tee "$OUT/$name-study.log"
}

case "$stage" in
  pack-corpus)
    mkdir -p "$corpus"
    [ -f out/corpus/train.txt.xz ] || xz -T2 -k -6 out/corpus/train.txt
    [ -f out/corpus/heldout.txt.xz ] || xz -k -6 out/corpus/heldout.txt
    cp out/corpus/train.txt.xz out/corpus/heldout.txt.xz out/corpus/packages.txt "$corpus/"
    ls -la "$corpus"
    ;;
  smoke)
    timeout 200 python3 tools/train/train.py --preset flash-routing --tokenizer "$tiny/tokenizer.json" \
      --corpus "$corpus" --out /tmp/fr-smoke --bundle-dir /tmp/fr-smoke/bundle --smoke \
      --total-seconds 150 --finish-reserve 60 2>&1 | tee "$OUT/smoke-train.log"
    cp "$tiny/tokenizer.json" /tmp/fr-smoke/repo/models/ds4-flash-routing/
    study 170 /tmp/fr-smoke/repo/models/ds4-flash-routing smoke --train-positions 65536 --trace-tokens 4096 --ranks 8,32
    rm -f "$OUT"/smoke*.xz "$OUT"/smoke*.hfadpt
    study 300 "$tiny" ds4-debian-tiny
    ;;
  tiny-study)
    study 300 "$tiny" ds4-debian-tiny
    ;;
  flash)
    # The checkpoint (~63 MB) cannot come back from the GPU machine (the transfer limits), so the
    # study runs in the same call, on the checkpoint just written.
    # 2026-12-01: training 300 s left the study 170 s, too little for the 256-expert trace (its text
    # stage alone needs about two minutes); 260 s of training leaves it 235 s.
    timeout 370 python3 tools/train/train.py --preset flash-routing --tokenizer "$tiny/tokenizer.json" \
      --corpus "$corpus" --out /tmp/fr --bundle-dir "$OUT" --total-seconds 350 --max-train-seconds 260 \
      --finish-reserve 75 2>&1 | tee "$OUT/train-flash.log"
    cp "$tiny/tokenizer.json" /tmp/fr/repo/models/ds4-flash-routing/
    study 235 /tmp/fr/repo/models/ds4-flash-routing ds4-flash-routing --train-positions 393216
    ;;
  flash-train)
    rm -rf out/fr
    timeout 585 python3 tools/train/train.py --preset flash-routing --tokenizer "$tiny/tokenizer.json" \
      --corpus "$corpus" --out out/fr --bundle-dir "$OUT" --total-seconds 560 --max-train-seconds 420 \
      --finish-reserve 100 2>&1 | tee "$OUT/train-flash.log"
    cp "$tiny/tokenizer.json" out/fr/repo/models/ds4-flash-routing/
    ;;
  flash-study)
    [ -f out/fr/repo/models/ds4-flash-routing/model.safetensors ] || { echo "flash-study: no checkpoint in out/fr (run flash-train first, in the same warm lease)" >&2; exit 1; }
    study 570 out/fr/repo/models/ds4-flash-routing ds4-flash-routing --train-positions 393216
    trace="$OUT/ds4-flash-routing-heldout.trace.xz"
    if [ -f "$trace" ]; then split -b 15M -d -a 1 "$trace" "$trace.part" && rm "$trace"; fi
    ls -la "$OUT"
    ;;
  *) echo "device_routing.sh: unknown stage $stage" >&2; exit 2 ;;
esac
