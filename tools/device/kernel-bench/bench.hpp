// The pieces every ds4-hip-bench file shares: the registry of benchmark families, the options,
// timing of a launcher on a stream and the one-line report of a case. Plain C++ (no HIP header).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "deepseek4/hip/stream.hpp"

namespace moepage::bench {

struct Options {
  int reps = 50;       // timed calls per case (after a warm-up)
  std::string filter;  // run only cases whose name contains this
};

// A family of cases (one bench_*.cpp). Registered at static-initialisation time.
using Family = std::function<void(const Options&)>;
struct Registrar {
  Registrar(const char* name, Family run);
};
struct RegisteredFamily {
  std::string name;
  Family run;
};
std::vector<RegisteredFamily>& families();

// True when `name` passes the --filter option.
bool selected(const Options& o, const std::string& name);

// Microseconds per call of call(i) for i = 0 .. reps-1 on `stream`, after a few warm-up calls:
// wall time between two stream synchronisations, so launch overhead counts as it does in decode.
double time_us(ds4::gpu::Stream stream, int reps, const std::function<void(int)>& call);

// One result line: name, bytes of weights read per call, us per call, GB/s.
void report(const std::string& name, uint64_t bytes, double us);

// Device-to-device copy rate (read + write bytes per second, GB/s) of one 1 GiB hipMemcpy.
double d2d_copy_gbps();

}  // namespace moepage::bench
