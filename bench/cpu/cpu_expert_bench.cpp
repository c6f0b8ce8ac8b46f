// How fast the host's CPU computes one routed expert of DeepSeek-V4-Flash for one token (w1 and w3
// 4096 -> 2048, then w2 2048 -> 4096, FP4 with e8m0 group scales, read in place by the CPU kernels
// of arch/deepseek4/cpu), by thread count: what computing some of a paged layer's misses on the
// host, beside the link that copies the others, could add to the rate at which misses are served.
// Random codes and scales; the bytes counter is the expert's weight and scale bytes per second.
//
//   build/bin/cpu-expert-bench [--benchmark_filter=...]   (google-benchmark's options)
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <random>
#include <thread>
#include <vector>

#include "deepseek4/cpu/gemm.hpp"

namespace {

using moepage::Dtype;
using moepage::ds4::cpu::MatRef;
using moepage::ds4::cpu::ThreadPool;

// One FP4 matrix [rows, cols] with its scales, filled from `seed`; scales near 2^0 (e8m0 120-129).
struct Fp4Matrix {
  std::vector<std::byte> codes, scales;
  MatRef ref;
  Fp4Matrix(int64_t rows, int64_t cols, uint32_t seed)
      : codes(size_t(rows * cols / 2)), scales(size_t(rows * cols / 32)) {
    std::mt19937 gen(seed);
    for (auto& b : codes) b = std::byte(gen() & 0xFF);
    for (auto& b : scales) b = std::byte(120 + gen() % 10);
    ref = MatRef{Dtype::I8, rows, cols, codes.data(), scales.data(), 0, 0};
  }
  int64_t bytes() const { return int64_t(codes.size() + scales.size()); }
};

void one_expert_one_token(benchmark::State& state) {
  const int64_t hidden = 4096, width = 2048;
  const Fp4Matrix w1(width, hidden, 1), w3(width, hidden, 2), w2(hidden, width, 3);
  ThreadPool pool(unsigned(state.range(0)));
  std::vector<float> x(static_cast<size_t>(hidden), 0.01f), gate(static_cast<size_t>(width)),
      up(static_cast<size_t>(width)), out(static_cast<size_t>(hidden));
  for (auto _ : state) {
    moepage::ds4::cpu::matmul(pool, w1.ref, x.data(), hidden, gate.data(), width, 1);
    moepage::ds4::cpu::matmul(pool, w3.ref, x.data(), hidden, up.data(), width, 1);
    moepage::ds4::cpu::matmul(pool, w2.ref, up.data(), width, out.data(), hidden, 1);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(state.iterations() * (w1.bytes() + w3.bytes() + w2.bytes()));
}

void thread_counts(benchmark::internal::Benchmark* b) {
  const int most = int(std::max(1u, std::thread::hardware_concurrency()));
  for (int t = 1; t < most; t *= 2) b->Arg(t);
  b->Arg(most);
}

}  // namespace

BENCHMARK(one_expert_one_token)->Apply(thread_counts)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_MAIN();
