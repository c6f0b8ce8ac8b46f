// Replays the committed seeds of the ablation-spec and generation_config.json fuzzers, and every
// truncation of each seed, through the fuzz bodies with the ordinary compiler (and under ASan in
// the sanitizer pass), so CI keeps what fuzzing found.
#include <doctest/doctest.h>

#include <filesystem>
#include <vector>

#include "fuzz_entries.hpp"
#include "support/seed_files.hpp"
#include "support/test_paths.hpp"

namespace {

size_t replay_dir(const char* sub, void (*body)(const uint8_t*, size_t)) {
  return moepage::test::replay_seeds(moepage::test::source_path("tests/fuzz-spec/seeds") / sub, body,
                                     /*truncations=*/true);
}

}  // namespace

TEST_CASE("every committed ablation-spec seed and its truncations are parsed or refused cleanly") {
  CHECK(replay_dir("ablation_spec", moepage::fuzz::ablation_spec_input) >= 3);
}

TEST_CASE("every committed generation_config.json seed and its truncations are applied or refused cleanly") {
  CHECK(replay_dir("generation_config", moepage::fuzz::generation_config_input) >= 3);
}

TEST_CASE("the generation_config body refuses nothing valid and lets no wrong type through") {
  const std::string valid =
      R"({"do_sample": true, "temperature": 0.7, "top_p": 0.9, "top_k": 40, "max_new_tokens": 64})";
  CHECK_NOTHROW(moepage::fuzz::generation_config_input(reinterpret_cast<const uint8_t*>(valid.data()), valid.size()));
}
