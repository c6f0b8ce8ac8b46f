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
case "${1:-}" in
  aside)
    mkdir -p "$store"
    for p in "${paths[@]}"; do
      [ -e "$p" ] || continue
      [ -e "$store/$p" ] && { echo "stash.sh: $store/$p exists already; run 'stash.sh back' first" >&2; exit 1; }
      mkdir -p "$store/$(dirname "$p")"
      mv "$p" "$store/$p"
    done ;;
  back)
    for p in "${paths[@]}"; do
      [ -e "$store/$p" ] || continue
      [ -e "$p" ] && { echo "stash.sh: $p is in the tree and in $store; keeping both, resolve by hand" >&2; exit 1; }
      mkdir -p "$(dirname "$p")"
      mv "$store/$p" "$p"
    done ;;
  *) echo "usage: tools/device/stash.sh aside|back" >&2; exit 2 ;;
esac
