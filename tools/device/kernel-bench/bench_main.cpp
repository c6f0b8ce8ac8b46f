// ds4-hip-bench: times the deepseek4 GPU launchers on the flash model's shapes.
// usage: ds4-hip-bench [--reps N] [--filter SUBSTRING]
// Prints the device-to-device copy rate first (the HBM roofline), then one line per case.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <utility>

#include "bench.hpp"
#include "deepseek4/hip/device_arena.hpp"

namespace moepage::bench {

std::vector<RegisteredFamily>& families() {
  static std::vector<RegisteredFamily> all;
  return all;
}

Registrar::Registrar(const char* name, Family run) { families().push_back({name, std::move(run)}); }

bool selected(const Options& o, const std::string& name) {
  return o.filter.empty() || name.find(o.filter) != std::string::npos;
}

double time_us(ds4::gpu::Stream stream, int reps, const std::function<void(int)>& call) {
  for (int i = 0; i < 3; ++i) call(i);
  ds4::gpu::synchronize(stream);
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < reps; ++i) call(i);
  ds4::gpu::synchronize(stream);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return s * 1e6 / reps;
}

void report(const std::string& name, uint64_t bytes, double us) {
  std::printf("%-52s %10.3f MB %10.2f us %9.1f GB/s\n", name.c_str(), double(bytes) / 1e6, us,
              double(bytes) / (us * 1e-6) / 1e9);
  std::fflush(stdout);
}

}  // namespace moepage::bench

int main(int argc, char** argv) {
  using namespace moepage::bench;
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--reps" && i + 1 < argc) o.reps = std::max(1, std::atoi(argv[++i]));
    else if (a == "--filter" && i + 1 < argc) o.filter = argv[++i];
    else {
      std::fprintf(stderr, "usage: ds4-hip-bench [--reps N] [--filter SUBSTRING]\n");
      return 2;
    }
  }
  try {
    std::printf("d2d copy 1 GiB (read+write): %.1f GB/s\n", d2d_copy_gbps());
    std::printf("%-52s %13s %13s %14s\n", "case", "weights", "per call", "rate");
    for (const auto& f : families()) f.run(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ds4-hip-bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
