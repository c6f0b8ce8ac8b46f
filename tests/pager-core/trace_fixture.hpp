// Synthetic expert traces for the simulator tests: skewed popularity that drifts over time (so
// recency and frequency both matter), and adversarial cyclic patterns.
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include "moepage/pager_core/policy.hpp"
#include "moepage/pager_core/trace.hpp"

namespace moepage::test {

// The policies the simulator tests compare, each with its default parameter (`using namespace
// moepage::test::policies` brings them all).
namespace policies {
inline const pager::PolicySpec kLru{pager::PolicyKind::Lru, 0}, kLfu{pager::PolicyKind::Lfu, 0},
    kLfru{pager::PolicyKind::Lfru, 0}, kBelady{pager::PolicyKind::Belady, 0};
}  // namespace policies

struct Lcg {
  uint64_t s;
  uint64_t next() {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    return s >> 33;
  }
};

// `tokens` tokens, each choosing top_k distinct experts per layer with a popularity skew whose
// hot set drifts every `drift` tokens.
inline pager::Trace random_trace(uint64_t seed, uint32_t layers, uint32_t experts, uint32_t top_k, uint32_t tokens,
                                 uint32_t drift = 16) {
  pager::Trace t;
  t.meta = {layers, experts, top_k};
  Lcg rng{seed * 2654435761u + 1};
  std::vector<uint8_t> used(experts);
  for (uint32_t tok = 0; tok < tokens; ++tok) {
    const uint32_t shift = (tok / drift) * 3;
    for (uint32_t l = 0; l < layers; ++l) {
      std::fill(used.begin(), used.end(), 0);
      for (uint32_t k = 0; k < top_k; ++k) {
        uint32_t e;
        do {
          // Product of two uniforms: small ranks are more likely (a cheap skew).
          const uint64_t a = rng.next() % experts, b = rng.next() % experts;
          e = uint32_t((a * b / experts + shift + l * 5) % experts);
        } while (used[e]);
        used[e] = 1;
        t.rows.push_back({tok, l, e, 0, 0});
      }
    }
  }
  return t;
}

// Cycles through `span` experts, top_k at a time: the classic pattern where lru misses always.
inline pager::Trace cyclic_trace(uint32_t experts, uint32_t span, uint32_t top_k, uint32_t tokens) {
  pager::Trace t;
  t.meta = {1, experts, top_k};
  uint32_t next = 0;
  for (uint32_t tok = 0; tok < tokens; ++tok)
    for (uint32_t k = 0; k < top_k; ++k) t.rows.push_back({tok, 0, (next++) % span, 0, 0});
  return t;
}

// A hot set requested every other token, with one-off experts scanning through in between
// (scans flush lru; lfu keeps the hot set).
inline pager::Trace scan_trace(uint32_t experts, uint32_t hot, uint32_t top_k, uint32_t tokens) {
  pager::Trace t;
  t.meta = {1, experts, top_k};
  uint32_t scan = hot;
  for (uint32_t tok = 0; tok < tokens; ++tok)
    for (uint32_t k = 0; k < top_k; ++k) {
      const uint32_t e = tok % 2 == 0 ? (tok / 2 * top_k + k) % hot : scan;
      if (tok % 2 == 1) scan = scan + 1 < experts ? scan + 1 : hot;
      t.rows.push_back({tok, 0, e, 0, 0});
    }
  return t;
}

// The popular experts of the first half are never used again in the second (stale counts hurt lfu).
inline pager::Trace phase_trace(uint32_t experts, uint32_t top_k, uint32_t tokens) {
  pager::Trace t;
  t.meta = {1, experts, top_k};
  const uint32_t half = experts / 2;
  for (uint32_t tok = 0; tok < tokens; ++tok) {
    const uint32_t base = tok < tokens / 2 ? 0 : half;
    for (uint32_t k = 0; k < top_k; ++k) t.rows.push_back({tok, 0, base + (tok * 7 + k * 3) % half, 0, 0});
  }
  return t;
}

}  // namespace moepage::test
