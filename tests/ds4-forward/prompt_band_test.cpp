// PromptBand: the first band a prompt chunk asks for at a layer, which the forward pass stages
// before the layer's attention (forward/prompt_band.hpp).
#include <doctest/doctest.h>

#include <vector>

#include "deepseek4/forward/prompt_band.hpp"

using moepage::ds4::PromptBand;

namespace {
std::vector<int32_t> as_vector(std::span<const int32_t> s) { return {s.begin(), s.end()}; }
}  // namespace

TEST_CASE("known routing: the lowest ids the chunk routes to, one band of them, only when they pass a band") {
  PromptBand pb(16, 2);
  const std::vector<int32_t> routed{9, 3, 3, 12, 5, 9, 1, 14};  // 4 tokens x top-2: {1, 3, 5, 9, 12, 14}
  CHECK(as_vector(pb.first_band(routed.data(), 4, 4)) == std::vector<int32_t>{1, 3, 5, 9});
  CHECK(as_vector(pb.first_band(routed.data(), 4, 2)) == std::vector<int32_t>{1, 3});
  // Six distinct experts fit a band of 6 or more: the step's hints staged them already.
  CHECK(pb.first_band(routed.data(), 4, 6).empty());
  // A pool that holds every expert is not paged.
  CHECK(pb.first_band(routed.data(), 4, 16).empty());
  // The scratch starts clean on every call: two tokens route to {3, 9, 12} only.
  CHECK(as_vector(pb.first_band(routed.data(), 2, 2)) == std::vector<int32_t>{3, 9});
}

TEST_CASE("ids out of range are skipped, not staged (the router names them)") {
  PromptBand pb(8, 2);
  const std::vector<int32_t> routed{-1, 7, 8, 2, 100, 4};
  CHECK(as_vector(pb.first_band(routed.data(), 3, 2)) == std::vector<int32_t>{2, 4});
}

TEST_CASE("hash layers: the experts tid2eid gives the chunk's tokens") {
  PromptBand pb(8, 2);
  const std::vector<int32_t> tid2eid{0, 1, 6, 7, 2, 5, 3, 4};  // 4 tokens of a vocabulary of 4
  const std::vector<int32_t> tokens{1, 2, 2, 3};               // {6, 7} {2, 5} {2, 5} {3, 4}
  CHECK(as_vector(pb.first_band_hashed(tid2eid.data(), 4, tokens.data(), 4, 3)) == std::vector<int32_t>{2, 3, 4});
  const std::vector<int32_t> with_bad{1, -5, 9, 3};  // ids outside the vocabulary are skipped
  CHECK(as_vector(pb.first_band_hashed(tid2eid.data(), 4, with_bad.data(), 4, 2)) == std::vector<int32_t>{3, 4});
  CHECK(pb.first_band_hashed(tid2eid.data(), 4, tokens.data(), 1, 2).empty());  // {6, 7}: one band
}

TEST_CASE("scored layers: a guess of the lowest ids, only when the chunk routes to nearly every expert") {
  PromptBand pb(16, 4);
  // S * top_k >= 4 * n_experts: 16 tokens or more.
  CHECK(pb.first_band(nullptr, 15, 4).empty());
  CHECK(as_vector(pb.first_band(nullptr, 16, 4)) == std::vector<int32_t>{0, 1, 2, 3});
  CHECK(as_vector(pb.first_band(nullptr, 2048, 6)) == std::vector<int32_t>{0, 1, 2, 3, 4, 5});
  CHECK(pb.first_band(nullptr, 2048, 16).empty());
  CHECK(pb.first_band(nullptr, 0, 4).empty());
}
