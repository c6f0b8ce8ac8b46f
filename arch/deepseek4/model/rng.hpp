// Deterministic random numbers for synthesized checkpoints: splitmix64 seeding xoshiro256**, and
// only arithmetic we define ourselves (std distributions differ across standard libraries, which
// would make "same seed, same bytes" false between machines).
#pragma once
#include <cstdint>
#include <string_view>

namespace moepage::ds4 {

inline uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// FNV-1a of a name, so every tensor gets its own stream whatever order tensors are written in.
inline uint64_t hash_name(std::string_view s) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (unsigned char ch : s) h = (h ^ ch) * 0x100000001B3ull;
  return h;
}

class Rng {
 public:
  explicit Rng(uint64_t seed) {
    uint64_t sm = seed;
    for (auto& w : s_) w = splitmix64(sm);
  }
  Rng(uint64_t seed, std::string_view stream) : Rng(seed ^ hash_name(stream)) {}

  uint64_t next() {
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }
  // Uniform in [0, 1) with 24 bits, exactly representable as float.
  float uniform() { return float(next() >> 40) * (1.0f / 16777216.0f); }
  // Uniform in [-a, a).
  float symmetric(float a) { return (2.0f * uniform() - 1.0f) * a; }
  // Uniform integer in [0, n) (multiply-shift; bias is negligible for the n used here).
  uint32_t below(uint32_t n) { return uint32_t(((next() >> 32) * uint64_t(n)) >> 32); }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

}  // namespace moepage::ds4
