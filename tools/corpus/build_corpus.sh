#!/usr/bin/env bash
# Builds the plain-English training corpus for tools/train/ from Debian documentation packages.
#
#   tools/corpus/build_corpus.sh [OUT_DIR]        (default: out/corpus)
#
# Installs linux-doc-6.1 (kernel reStructuredText) and python3.11-doc (Python's Sphinx HTML) when
# they are missing, records their exact versions, converts both to one paragraph per line,
# deduplicates, and splits by a hash of each paragraph (2 % held out). Writes:
#   train.txt heldout.txt            the corpus (never committed)
#   train.txt.xz heldout.txt.xz      compressed copies small enough to carry to the GPU machine
#   packages.txt                     package name and version, one a line (dpkg-query)
#   stats.json                       paragraph counts and sizes
#   SHA256SUMS                       of the four text files above
# The same package versions give byte-identical output.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
out="${1:-$repo/out/corpus}"
packages=(linux-doc-6.1 python3.11-doc)
rst_root=/usr/share/doc/linux-doc-6.1/Documentation
html_root=/usr/share/doc/python3.11/html

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "build_corpus: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

mkdir -p "$out"
dpkg-query -W -f='${Package} ${Version}\n' "${packages[@]}" > "$out/packages.txt"
echo "build_corpus: sources:"; sed 's/^/  /' "$out/packages.txt"

python3 "$here/extract_text.py" "$out" --rst-root "$rst_root" --html-root "$html_root"

echo "build_corpus: compressing"
for f in train.txt heldout.txt; do
  xz -6 -T1 -k -f "$out/$f"
done
(cd "$out" && sha256sum train.txt heldout.txt train.txt.xz heldout.txt.xz > SHA256SUMS)
echo "build_corpus: done in $out"
ls -l "$out"
