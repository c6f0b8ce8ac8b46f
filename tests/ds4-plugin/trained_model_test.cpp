// The trained models/ds4-debian-tiny (released layout: FP8 dense, FP4 experts) through the ABI
// against its float64 transformers logits fixture and its greedy continuation.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "ds4-forward/npy.hpp"
#include "plugin_stack.hpp"
#include "support/test_paths.hpp"

namespace fs = std::filesystem;

TEST_CASE("the trained ds4-debian-tiny model matches its transformers logits and greedy continuation") {
  const fs::path root = moepage::test::source_dir();
  const fs::path fixture = moepage::test::fixture_path("ds4-debian-tiny");
  REQUIRE(fs::exists(fixture / "logits.json"));
  std::ifstream jf(fixture / "logits.json");
  const auto meta = nlohmann::json::parse(jf);
  const auto prompt = meta["prompt_ids"].get<std::vector<int32_t>>();
  const auto positions = meta["positions"].get<std::vector<size_t>>();
  const auto greedy = meta["greedy_continuation_ids"].get<std::vector<int32_t>>();
  const auto ref = moepage::test::read_npy((fixture / "logits.npy").string());

  moepage::test::PluginStack stack(root / meta["model"].get<std::string>());
  const size_t P = prompt.size(), V = stack.info.vocab_size;
  REQUIRE(ref.shape == std::vector<int64_t>{int64_t(positions.size()), int64_t(V)});

  std::vector<float> logits(P * V);
  stack.arch.forward(prompt, logits.data(), MP_FORWARD_ALL_LOGITS);
  double worst = 0;
  for (size_t i = 0; i < positions.size(); ++i) {
    REQUIRE(positions[i] < P);
    for (size_t v = 0; v < V; ++v)
      worst = std::max(worst, double(std::fabs(logits[positions[i] * V + v] - ref.f32[i * V + v])));
  }
  CHECK(worst < 1e-3);

  std::vector<int32_t> ours;
  std::vector<float> row(logits.end() - long(V), logits.end());
  while (ours.size() < greedy.size()) {
    const int32_t next = int32_t(std::max_element(row.begin(), row.end()) - row.begin());
    ours.push_back(next);
    stack.arch.forward(std::span<const int32_t>(&next, 1), row.data(), MP_FORWARD_LAST_LOGITS);
  }
  CHECK(ours == greedy);
  MESSAGE("ds4-debian-tiny: max |diff| ", worst, " over ", positions.size(), " positions");
}
