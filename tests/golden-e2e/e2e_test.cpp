// `moepage synth`, `run` and `inspect` as a user runs them, through the built binary and plugins.
#include <doctest/doctest.h>

#include <unistd.h>
#include <algorithm>
#include <cmath>
#include <filesystem>

#include "cli/child_process.hpp"
#include "ds4-forward/npy.hpp"
#include "support/temp_dir.hpp"
#include "support/test_paths.hpp"

namespace fs = std::filesystem;
using moepage::test::ids_line;
using moepage::test::run_moepage;
using moepage::test::TempDir;

namespace {

std::string default_profile() { return moepage::test::source_path("configs/default.yaml").string(); }

}  // namespace

TEST_CASE("moepage synth --preset tiny then moepage run prints the generated ids and tok/s") {
  const TempDir tmp("e2e-tiny");
  const fs::path model = tmp / "model";
  const auto synth = run_moepage({"synth", "--preset", "tiny", "--seed", "7", "--out", model.string()});
  INFO(synth.err);
  REQUIRE(synth.exit_code == 0);
  CHECK(synth.out.find("wrote " + model.string()) != std::string::npos);
  REQUIRE(fs::exists(model / "config.json"));

  const auto run = run_moepage(
      {"run", "--profile", default_profile(), "--model", model.string(), "--prompt-ids", "1,2,3", "--max-tokens", "6"});
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  CHECK(ids_line(run.out).size() == 6);
  CHECK(run.err.find("tok/s); decode 5 tokens") != std::string::npos);
  CHECK(run.err.find("hit rate 100.0%") != std::string::npos);
}

TEST_CASE("--dump-logits writes [P + N - 1, vocab] rows that match the golden fixture position by position") {
  const fs::path fixture = moepage::test::fixture_path("hc4-mixed");
  const auto prompt = moepage::test::read_npy((fixture / "prompt_ids.npy").string());
  const auto greedy = moepage::test::read_npy((fixture / "greedy_ids.npy").string());
  const auto prefill = moepage::test::read_npy((fixture / "prefill_logits.npy").string());
  const auto decode = moepage::test::read_npy((fixture / "decode_logits.npy").string());
  std::string ids;
  for (int64_t v : prompt.i64) ids += (ids.empty() ? "" : ",") + std::to_string(v);
  const TempDir out("e2e-dump");
  const fs::path npy = out / "logits.npy";
  const int N = 5;
  const auto run = run_moepage({"run", "--profile", default_profile(), "--model", fixture.string(), "--prompt-ids", ids,
                                "--max-tokens", std::to_string(N), "--dump-logits", npy.string()});
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  const std::vector<int32_t> got = ids_line(run.out);
  REQUIRE(got.size() == size_t(N));
  CHECK(got == std::vector<int32_t>(greedy.i64.begin(), greedy.i64.begin() + N));

  const auto dumped = moepage::test::read_npy(npy.string());
  const int64_t P = int64_t(prompt.i64.size()), V = prefill.shape[1];
  REQUIRE(dumped.shape == std::vector<int64_t>{P + N - 1, V});
  double worst = 0;
  // Rows 0..P-1: the prompt positions; row P + i: after feeding generated token i.
  for (int64_t t = 0; t < P + N - 1; ++t) {
    const float* want = t < P ? prefill.f32.data() + t * V : decode.f32.data() + (t - P) * V;
    for (int64_t v = 0; v < V; ++v) worst = std::max(worst, double(std::fabs(dumped.f32[size_t(t * V + v)] - want[v])));
  }
  CHECK(worst < 1e-3);
  // Row t chose the token at t + 1: the last prompt row's argmax is the first generated id.
  const float* last = dumped.f32.data() + (P - 1) * V;
  CHECK(int32_t(std::max_element(last, last + V) - last) == got[0]);
}

TEST_CASE("moepage synth with an unknown expert dtype fails with one line naming it") {
  const TempDir tmp("e2e-bad");
  const auto synth =
      run_moepage({"synth", "--preset", "tiny", "--expert-dtype", "fp5", "--out", (tmp / "model").string()});
  CHECK(synth.exit_code == 1);
  CHECK(synth.err.find("'fp5'") != std::string::npos);
}
