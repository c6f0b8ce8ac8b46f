#!/usr/bin/env bash
# Packs everything under a device call's output folder into one archive, OUT/NAME.tar.xz (default
# NAME: all), and removes what it packed: a call returns at most 8 files, none deeper than two
# folders, so a benchmark's many logs come back only packed. Unpack here with tar xJf.
#   tools/device/pack_out.sh OUT [NAME]
set -euo pipefail
[ $# -ge 1 ] || { sed -n '2,5p' "$0"; exit 2; }
out=$1 name=${2:-all}
cd "$out"
entries=()
for entry in * .[!.]*; do
  [ -e "$entry" ] && [ "$entry" != "$name.tar.xz" ] && entries+=("$entry")
done
[ ${#entries[@]} -gt 0 ] || { echo "pack_out.sh: nothing under $out to pack" >&2; exit 0; }
tar cJf "$name.tar.xz" "${entries[@]}"
rm -rf "${entries[@]}"
echo "pack_out.sh: $out/$name.tar.xz ($(du -h "$name.tar.xz" | cut -f1)) holds ${entries[*]}"
