#!/usr/bin/env bash
# Formats C and C++ sources with the tree's .clang-format (clang-format 14, Debian 12).
#   tools/lint/format.sh FILE...    format these files in place
#   tools/lint/format.sh            format the C/C++ files changed against main (committed or not)
#   tools/lint/format.sh --check    the same files, changed nothing; exit 1 naming each file that is off
set -euo pipefail
cd "$(dirname "$0")/../.."

check=0
if [ "${1:-}" = --check ]; then
  check=1
  shift
fi
if [ $# -gt 0 ]; then
  files=("$@")
else
  mapfile -t files < <({ git diff --name-only --diff-filter=d main...HEAD; git diff --name-only --diff-filter=d HEAD;
    git ls-files --others --exclude-standard; } | grep -E '\.(c|cc|cpp|h|hpp|hip|cu|cuh)$' | sort -u)
fi
[ ${#files[@]} -gt 0 ] || exit 0

if [ $check = 0 ]; then
  clang-format -i "${files[@]}"
  exit 0
fi
status=0
for f in "${files[@]}"; do
  if ! clang-format --dry-run --Werror "$f" 2>/dev/null; then
    echo "format.sh: $f is not formatted (run tools/lint/format.sh $f)" >&2
    status=1
  fi
done
exit $status
