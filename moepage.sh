#!/usr/bin/env bash
# One entry point for people and CI. Every command installs what it needs first (Debian 12, root).
#   ./moepage.sh demo   set-up, build, synthesize a model, run the demo
#   ./moepage.sh test   set-up, build (plain and ASan+UBSan), run every test
#   ./moepage.sh build  set-up and build into build/
set -euo pipefail
cd "$(dirname "$0")"
jobs=$(nproc)

setup() { bash tools/setup.sh; }

build_tree() {  # build_tree DIR [cmake args...]
  local dir=$1; shift
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
  cmake --build "$dir" -j "$jobs"
}

cmd=${1:-help}
case "$cmd" in
  build)
    setup
    build_tree build
    ;;
  test)
    setup
    build_tree build
    # Self-tests of the corpus and training scripts (standard library only; torch is not needed).
    python3 tools/corpus/test_extract_text.py
    python3 tools/train/selftest.py
    (cd build && ctest --output-on-failure -j "$jobs")
    # The same suites under AddressSanitizer + UndefinedBehaviorSanitizer.
    build_tree build-asan -DMOEPAGE_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug
    (cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
       ctest --output-on-failure -j "$jobs" -LE slow)
    ;;
  demo)
    setup
    build_tree build
    bash tools/demo.sh build
    ;;
  *)
    sed -n '2,6p' "$0"
    [ "$cmd" = help ] || exit 2
    ;;
esac
