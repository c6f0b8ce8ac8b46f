#!/usr/bin/env bash
# moepage demo: the ablation demo on the trained models/ds4-debian-tiny (resident vs LRU budgets vs
# adapter-prefetch with the trained predictor: one table with ids==arm0 and hit rates per arm, plus
# an SVG plot), then the same model from a text prompt, streaming text.
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

echo "== ablation: resident vs lru at several budgets vs adapter-prefetch (configs/ablations/demo.yaml)"
"$moepage" ablate configs/ablations/demo.yaml --out out/ablation-demo
echo "tables and plot: out/ablation-demo/table.md, table.csv, table.json, plot.svg"

echo
echo "== models/ds4-debian-tiny: trained on Debian documentation, prompted with text"
"$moepage" run --profile configs/default.yaml --model models/ds4-debian-tiny \
  --prompt "To install the package, run" --max-tokens 48
