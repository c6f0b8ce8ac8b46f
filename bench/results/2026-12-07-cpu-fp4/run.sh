#!/usr/bin/env bash
# The CPU FP4 change of 2026-12-07 against the code before it (cfa3031^), on this machine: one
# Flash expert for one token (bench/cpu/cpu_expert_bench.cpp) built three ways, alternated, and the
# outputs of matmul_rows over every encoding and several shapes hashed for each build (bitcheck_main.cpp).
# Run from the repository root of a Release build tree at cfa3031 (libbenchmark-dev installed).
set -euo pipefail
w=$(mktemp -d)
git show cfa3031^:arch/deepseek4/cpu/gemm.cpp > "$w/gemm_old.cpp"
sed 's/__attribute__((target_clones("avx2", "default")))//' arch/deepseek4/cpu/gemm.cpp > "$w/gemm_noclone.cpp"
fl=(-std=c++20 -O3 -Iarch -Iplugins/support -Iplugins/include)
libs=("$(find build/plugins -name libmoepage-dtype.a)" -lbenchmark -lpthread)
new=(arch/deepseek4/cpu/gemm.cpp arch/deepseek4/cpu/fp4_decode.cpp)
g++ "${fl[@]}" bench/cpu/cpu_expert_bench.cpp "$w/gemm_old.cpp" arch/deepseek4/cpu/thread_pool.cpp "${libs[@]}" -o "$w/old"
g++ "${fl[@]}" bench/cpu/cpu_expert_bench.cpp "$w/gemm_noclone.cpp" arch/deepseek4/cpu/fp4_decode.cpp \
  arch/deepseek4/cpu/thread_pool.cpp "${libs[@]}" -o "$w/decode-only"
g++ "${fl[@]}" bench/cpu/cpu_expert_bench.cpp "${new[@]}" arch/deepseek4/cpu/thread_pool.cpp "${libs[@]}" -o "$w/new"
for rep in 1 2; do
  for b in old decode-only new; do
    echo "$b: $("$w/$b" --benchmark_filter=/1/ --benchmark_repetitions=5 --benchmark_report_aggregates_only=true 2>&1 | grep median)"
  done
done
d=bench/results/2026-12-07-cpu-fp4
g++ "${fl[@]}" "$d/bitcheck_main.cpp" "$w/gemm_old.cpp" arch/deepseek4/cpu/thread_pool.cpp "${libs[@]}" -o "$w/hash-old"
g++ "${fl[@]}" "$d/bitcheck_main.cpp" "${new[@]}" arch/deepseek4/cpu/thread_pool.cpp "${libs[@]}" -o "$w/hash-new"
echo "outputs hashed, before: $("$w/hash-old")  after: $("$w/hash-new")"
