#!/usr/bin/env bash
# clang-tidy (checks in .clang-tidy) over the project's own C++ sources; exit 1 on any finding.
#   tools/lint/tidy.sh BUILD_DIR          the CI set: plugins/, pagers/, transports/
#   tools/lint/tidy.sh BUILD_DIR --all    every C++ source BUILD_DIR compiles (about 15x the time)
# BUILD_DIR needs compile_commands.json from a configure without CMAKE_UNITY_BUILD (a unity
# build lists its merged files instead of the sources); configuring is enough, nothing is built.
# The CI set is the code that runs inside plugins, on both sides of the C ABI (the SDK, the
# support libraries, the shipped pagers and transports): about 3 CPU-minutes, where every source
# would take about 45 (each file parses its heavy headers: nlohmann/json, spdlog, yaml-cpp, boost).
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:?usage: tools/lint/tidy.sh BUILD_DIR [--all]}
db="$build/compile_commands.json"
[ -f "$db" ] || { echo "tidy.sh: $db missing (configure $build first)" >&2; exit 2; }
tidy=$(command -v clang-tidy-14 || command -v clang-tidy || true)
[ -n "$tidy" ] || { echo "tidy.sh: clang-tidy not found (tools/setup.sh installs clang-tidy-14)" >&2; exit 2; }

# The sources compile_commands.json lists, relative to the source root, one a line.
sources=$(python3 -c 'import json, os, sys
root = os.getcwd() + "/"
for e in json.load(open(sys.argv[1])):
    f = os.path.normpath(os.path.join(e["directory"], e["file"]))
    if f.startswith(root) and f.endswith(".cpp"): print(f[len(root):])' "$db" | sort -u)
if [ "${2:-}" != --all ]; then
  sources=$(grep -E '^(plugins|pagers|transports)/' <<<"$sources" || true)
fi
[ -n "$sources" ] || { echo "tidy.sh: no sources to check in $db" >&2; exit 2; }

echo "tidy.sh: $(wc -l <<<"$sources") files"
# xargs exits 123 when any clang-tidy call failed; --quiet and the filter drop the per-file counts
# of (suppressed) warnings in library headers.
if ! xargs -P "$(nproc)" -n 1 "$tidy" -p "$build" --quiet <<<"$sources" 2> >(grep -v ' warnings\? generated\.$' >&2); then
  echo "tidy.sh: clang-tidy found problems (above)" >&2
  exit 1
fi
echo "tidy.sh: clean"
