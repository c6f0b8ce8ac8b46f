#!/usr/bin/env bash
# Moves the tracked files a device call does not need out of the working tree, and back, so the
# tree that travels (64 MiB with build-carry/gpu.tar.xz) has room for the pack: the held-out
# routing traces (the GPU suites use the tiny model, not them) and bench/results (what was
# measured, read here). Run `tools/device/stash.sh aside` before tools/device/build.sh (which
# sizes the pack's limit by the files present) and the device calls, `tools/device/stash.sh back`
# after; the CPU tests that replay the traces fail while they are aside.
set -euo pipefail
cd "$(dirname "$0")/../.."
store=${MOEPAGE_STASH:-/tmp/moepage-device-stash}
paths=(tests/data/ds4-debian-tiny-heldout.trace.xz tests/data/ds4-debian-tiny-heldout-head.trace.xz
  tests/data/ds4-flash-routing-heldout.trace.xz bench/results)
# Moves every path present under $1 to the same place under $2, refusing to overwrite.
move_all() {
  for p in "${paths[@]}"; do
    [ -e "$1/$p" ] || continue
    [ -e "$2/$p" ] && { echo "stash.sh: $2/$p exists already; resolve by hand (nothing of it was moved)" >&2; exit 1; }
    mkdir -p "$2/$(dirname "$p")"
    mv "$1/$p" "$2/$p"
  done
}
case "${1:-}" in
  aside) mkdir -p "$store" && move_all . "$store" ;;
  back) move_all "$store" . ;;
  *) echo "usage: tools/device/stash.sh aside|back" >&2; exit 2 ;;
esac
