#!/usr/bin/env bash
# moepage demo: synthesizes the `small` DeepSeek-V4 preset into out/small (once) and runs it from
# token ids, then runs the trained models/ds4-debian-tiny from a text prompt and streams text.
#   tools/demo.sh BUILD_DIR
# BUILD_DIR is a configured and built tree (cmake --build BUILD_DIR --target moepage
# moepage-arch-deepseek4 moepage-pager-resident moepage-transport-pread).
set -euo pipefail
if [[ $# -ne 1 ]]; then
  echo "usage: tools/demo.sh BUILD_DIR" >&2
  exit 2
fi
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$(cd "$1" && pwd)"
moepage="$build/bin/moepage"
if [[ ! -x "$moepage" ]]; then
  echo "demo: $moepage does not exist; build the moepage target in $build first" >&2
  exit 1
fi
cd "$root"

if [[ ! -f out/small/config.json ]]; then
  echo "== synthesizing the small preset into out/small"
  "$moepage" synth --preset small --seed 0 --out out/small
fi
echo "== out/small: 32 tokens from 8 prompt ids (random weights: the ids are not text)"
"$moepage" run --profile configs/default.yaml --model out/small --prompt-ids 1,2,3,4,5,6,7,8 --max-tokens 32

echo
echo "== models/ds4-debian-tiny: trained on Debian documentation, prompted with text"
"$moepage" run --profile configs/default.yaml --model models/ds4-debian-tiny \
  --prompt "To install the package, run" --max-tokens 48
