#!/usr/bin/env bash
# One entry point for people and CI. Every command installs what it needs first (Debian 12, root).
#   ./moepage.sh demo   set-up, build, synthesize a model, run the demo
#   ./moepage.sh test   set-up; clang-tidy; every test under ASan+UBSan; the tests the sanitizers
#                       distort on a plain build of the runtime; the threaded suites under TSan; the
#                       libFuzzer targets built with clang and run briefly; compile the GPU builds
#                       (warnings are errors throughout)
#   ./moepage.sh build  set-up and build into build/
#   ./moepage.sh gpu-build  set-up, compile and link the hip-amd and hip-nvidia builds (no GPU needed)
set -euo pipefail
cd "$(dirname "$0")"
jobs=$(nproc)

setup() { bash tools/setup.sh; }

# configure DIR [cmake args...]: Ninja for a new build folder (less overhead than make, and a
# target's sources compile while its dependencies still link); a folder configured before keeps
# its generator, since CMake refuses to switch.
configure() {
  local dir=$1; shift
  local generator=(-G Ninja)
  if [ -f "$dir/CMakeCache.txt" ] && ! grep -q '^CMAKE_GENERATOR:INTERNAL=Ninja$' "$dir/CMakeCache.txt"; then generator=(); fi
  cmake -S . -B "$dir" "${generator[@]}" "$@" >/dev/null
}

build_tree() {  # build_tree DIR [cmake args...]
  local dir=$1; shift
  configure "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@"
  cmake --build "$dir" -j "$jobs"
}

# CI compiles each source as few times as it can (2 cores, 30 minutes): every test suite is built
# once, under AddressSanitizer + UndefinedBehaviorSanitizer at -O0 with line tables only (-g1: ASan's
# reports still name file and line; full debug info would cost 7% more compile time, and -O1 2.3x).
# The tests those sanitizers distort (`slow`: RSS measurements, a second CMake project, a 2 GiB
# write) run on a plain build of just the runtime and those tests, at -O1 -g1 (40% less compile
# time than -O2 -g, measured on the heaviest sources).
# Every CI tree is a unity build of whole targets (each target's sources compiled as one file: the
# heavy headers are parsed, and their templates instantiated, once per target instead of once per
# source; 45% less CPU for the ASan tree) with Ninja, and warnings are errors. A unity build needs
# the files of one target to agree on internal names: two `namespace { void fail(); }` in one
# target collide, so give such helpers one shared home or distinct names.
ci_tree_flags=(-DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=0 -DMOEPAGE_WERROR=ON)
ci_asan_flags=(-DMOEPAGE_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O0 -g1" -DCMAKE_C_FLAGS_DEBUG="-O0 -g1"
  "${ci_tree_flags[@]}")
ci_plain_flags=(-DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG"
  "${ci_tree_flags[@]}")
build_slow_tree() {  # build_slow_tree DIR: the runtime and the `slow` tests' binaries
  configure "$1" -DCMAKE_BUILD_TYPE=RelWithDebInfo "${ci_plain_flags[@]}"
  cmake --build "$1" -j "$jobs" --target moepage-runtime golden-e2e-flash-test
}

# The CLI and the shipped plugins only: what the demo runs, without the test suites.
build_runtime() {  # build_runtime DIR
  configure "$1" -DCMAKE_BUILD_TYPE=RelWithDebInfo
  cmake --build "$1" -j "$jobs" --target moepage-runtime
}

# The CPU seconds (user + system) of this shell's finished children, from bash's `times`.
children_cpu() {
  local t
  t=$(mktemp)
  times >"$t"  # a builtin with a redirect runs in this shell; $(times) would report a subshell's
  awk 'NR == 2 { split($1, u, /[ms]/); split($2, s, /[ms]/); printf "%.0f", u[1] * 60 + u[2] + s[1] * 60 + s[2] }' "$t"
  rm -f "$t"
}

stage() {  # stage NAME command...: runs it and prints one line: wall seconds, CPU seconds, load
  local name=$1 start=$SECONDS cpu_file cpu0 load
  shift
  cpu_file=$(mktemp)
  children_cpu >"$cpu_file"
  cpu0=$(<"$cpu_file")
  "$@"
  children_cpu >"$cpu_file"
  read -r load _ </proc/loadavg
  echo "stage $name: $((SECONDS - start)) s wall, $(($(<"$cpu_file") - cpu0)) s CPU (load $load)"
  rm -f "$cpu_file"
}

# clang-tidy (.clang-tidy; tools/lint/tidy.sh says which files and why) reads compile_commands.json
# of a plain, non-unity configure: nothing is built for it.
run_tidy() {  # run_tidy DIR
  configure "$1" -DCMAKE_BUILD_TYPE=Debug
  tools/lint/tidy.sh "$1"
}

# ThreadSanitizer over the suites whose code runs threads: the transports (reader threads, the
# pinned-async completion path, io-uring's ring driven from many threads, mapped's tickets from many
# threads), the pagers (prefetch fills racing demand reads) and the plugin loader. Only those test
# targets (and the plugins they load) are built, at -O1, to keep CI cheap; ASLR is turned off for
# the run because gcc 12's TSan cannot map its shadow under high mmap randomisation.
tsan_suites="pread-tests io-uring-tests mapped-tests paging-tests pager-core-tests loader-tests ds4-expert-parallel-test parallel-tests"
build_tsan_tree() {  # build_tsan_tree DIR
  configure "$1" -DMOEPAGE_TSAN=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" \
    -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1" "${ci_tree_flags[@]}"
  # shellcheck disable=SC2086  # the suite names are words
  cmake --build "$1" -j "$jobs" --target $tsan_suites
}
run_tsan_suites() {  # run_tsan_suites DIR
  (cd "$1" && TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 setarch "$(uname -m)" -R \
    ctest --output-on-failure -j "$jobs" -R "^(${tsan_suites// /|})\$")
}

# GPU builds compile and link only (CI has no GPU): every kernel, the HIP device service (linked
# into the device-hip suite), the deepseek4 plugin with its GPU model and the kernel suite. The CLI
# (whose GPU part is one call of make_hip_device_service) and the end-to-end GPU suites would
# double the build for little: tools/device/build.sh builds them for the GPU machine. No debug info,
# and host C++ and kernels at -O1 (MOEPAGE_GPU_OPT; nothing built here runs), keep nvcc and hipcc
# within the CI budget.
# hipcc compiles for one AMD target here, gfx90a: its 64-wide wavefronts are the code path the
# NVIDIA build (32-wide warps) does not see; a second target would double hipcc's time to find the
# same source errors.
build_gpu_tree() {  # build_gpu_tree DIR hip-amd|hip-nvidia
  local dir=$1 backend=$2
  local backend_flags=(-DMOEPAGE_AMD_ARCHS=gfx90a -DMOEPAGE_GPU_OPT=-O1)
  # nvcc: the kernels' own level (MOEPAGE_GPU_OPT) comes last and wins; another -O would only draw a warning.
  [ "$backend" = hip-nvidia ] && backend_flags=(-DCMAKE_CUDA_FLAGS_RELEASE="-DNDEBUG" -DMOEPAGE_GPU_OPT=-O1)
  configure "$dir" -DMOEPAGE_GPU="$backend" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O1 -DNDEBUG" \
    "${backend_flags[@]}" "${ci_tree_flags[@]}"
  cmake --build "$dir" -j "$jobs" --target moepage-device-hip moepage-ds4-hip-kernels moepage-arch-deepseek4 \
    device-hip ds4-hip-kernels
}

# The libFuzzer targets (moepage_add_fuzzer; clang only, so no other stage compiles them) build,
# and each runs 20,000 inputs from its committed seeds (tools/fuzz/seeds.sh) under ASan and
# UBSan, so a change that breaks a target's clang build or its harness shows here rather than in
# the next campaign (tools/fuzz/campaign.sh). -O1 without debug info; a unity build with warnings
# as errors like the other trees (the GCC-only warning pragmas are fenced off from clang). New
# inputs go to a scratch corpus, never into the committed seeds.
build_fuzz_tree() {  # build_fuzz_tree DIR
  configure "$1" -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_COMPILER=clang -DMOEPAGE_FUZZ=ON "${ci_tree_flags[@]}" \
    -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O1 -DNDEBUG" -DCMAKE_C_FLAGS_RELEASE="-O1 -DNDEBUG"
  local targets
  # The help target's lines: "fuzz-x: phony" (Ninja) or "... fuzz-x" (make).
  mapfile -t targets < <(cmake --build "$1" --target help |
    sed -n -e 's/^\(fuzz-[a-z-]*\): .*/\1/p' -e 's/^\.\.\. \(fuzz-[a-z-]*\).*/\1/p')
  cmake --build "$1" -j "$jobs" --target "${targets[@]}"
}
run_fuzz_smoke() {  # run_fuzz_smoke DIR
  # shellcheck source=tools/fuzz/seeds.sh
  source tools/fuzz/seeds.sh
  local scratch t
  scratch=$(mktemp -d)
  for t in "${!fuzz_seeds[@]}"; do
    local seeds=()
    [ -d "${fuzz_seeds[$t]}" ] && seeds=("${fuzz_seeds[$t]}")
    mkdir -p "$scratch/$t"
    ASAN_OPTIONS=detect_leaks=1 "$1/bin/fuzz-$t" -runs=20000 -rss_limit_mb=2048 -timeout=20 \
      "$scratch/$t" "${seeds[@]}" > "$scratch/$t.log" 2>&1 ||
      { tail -40 "$scratch/$t.log"; echo "moepage.sh: fuzz-$t failed its smoke run" >&2; rm -rf "$scratch"; return 1; }
    echo "fuzz-$t: $(grep -o 'Done [0-9]* runs in [0-9]* second' "$scratch/$t.log")"
  done
  rm -rf "$scratch"
}

build_gpu_trees() {
  if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then export PATH=/usr/local/cuda/bin:$PATH; fi
  command -v nvcc >/dev/null || { echo "moepage.sh: nvcc not found (install the CUDA toolkit) for the hip-nvidia build" >&2; exit 1; }
  stage gpu-build-amd build_gpu_tree build-amd hip-amd
  stage gpu-build-nv build_gpu_tree build-nv hip-nvidia
}

cmd=${1:-help}
case "$cmd" in
  build)
    setup
    build_tree build
    ;;
  test)
    stage setup setup
    # Self-tests of the corpus and training scripts (standard library only; torch is not needed).
    stage script-selftests eval 'python3 tools/corpus/test_extract_text.py && python3 tools/train/selftest.py'
    stage clang-tidy run_tidy build-tidy
    stage build-asan build_tree build-asan "${ci_asan_flags[@]}"
    stage tests-asan eval '(cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
       ctest --output-on-failure -j "$jobs" -LE slow)'
    stage build-plain build_slow_tree build
    stage tests-plain eval '(cd build && ctest --output-on-failure -j "$jobs" -L slow)'
    stage build-tsan build_tsan_tree build-tsan
    stage tests-tsan run_tsan_suites build-tsan
    stage build-fuzz build_fuzz_tree build-fuzz
    stage fuzz-smoke run_fuzz_smoke build-fuzz
    build_gpu_trees
    ;;
  gpu-build)
    setup
    build_gpu_trees
    ;;
  demo)
    setup
    build_runtime build
    bash tools/demo.sh build
    ;;
  *)
    sed -n '2,8p' "$0"
    [ "$cmd" = help ] || exit 2
    ;;
esac
