// `moepage synth --preset flash` + `moepage inspect`: the released model's per-expert geometry.
// Labelled slow (about 20 s on 2 cores: the flash embedding and head alone are ~2 GiB of random
// weights even with one layer), so the sanitizer pass can leave it out; the plain pass runs it.
#include <doctest/doctest.h>

#include <filesystem>

#include "cli/child_process.hpp"
#include "support/temp_dir.hpp"

namespace fs = std::filesystem;
using moepage::test::run_moepage;

TEST_CASE("moepage synth --preset flash then inspect reports 13,369,344 bytes per expert") {
  // Bytes per expert do not depend on the expert count: 8 experts keep this fast (the full
  // 256-expert layer is recorded in the report, not run in CI).
  const moepage::test::TempDir tmp("e2e-flash");
  const fs::path model = tmp / "model";
  const auto synth =
      run_moepage({"synth", "--preset", "flash", "--layers", "1", "--experts", "8", "--out", model.string()});
  INFO(synth.err);
  REQUIRE(synth.exit_code == 0);
  const auto inspect = run_moepage({"inspect", model.string(), "--budget", "1GiB"});
  INFO(inspect.err);
  REQUIRE(inspect.exit_code == 0);
  CHECK(inspect.out.find("architecture deepseek4") != std::string::npos);
  CHECK(inspect.out.find("bytes per expert   13,369,344") != std::string::npos);
  CHECK(inspect.out.find("layer schedule") != std::string::npos);
  CHECK(inspect.out.find("layers.{*}.ffn.experts.{*}.w1.weight") != std::string::npos);
  CHECK(inspect.out.find("slots per layer  8 of 8") != std::string::npos);
  CHECK(inspect.out.find("every expert fits") != std::string::npos);
}
