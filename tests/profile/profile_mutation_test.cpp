// Bad input gets a clear error, never a crash: the example profiles, mutated at random with a
// fixed seed, must either load or throw ProfileError. Runs in every build (also under ASan+UBSan).
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "profile/profile.hpp"
#include "support/temp_dir.hpp"
#include "support/test_paths.hpp"

namespace fs = std::filesystem;

namespace {

std::string read_text(const fs::path& path) {
  std::ostringstream out;
  out << std::ifstream(path).rdbuf();
  return out.str();
}

// One random edit: YAML-significant characters are favoured because they reach the most paths.
std::string mutate(std::string text, std::mt19937& rng) {
  static const std::string kSpecial = ":[]{}-#&*!|>'\"%@`,? \n\t~0123456789.";
  auto pick = [&](size_t n) { return n == 0 ? size_t{0} : static_cast<size_t>(rng() % n); };
  const int edits = 1 + static_cast<int>(rng() % 4);
  for (int e = 0; e < edits; ++e) {
    const size_t at = pick(text.size() + 1);
    switch (rng() % 5) {
      case 0: text.insert(at, 1, kSpecial[pick(kSpecial.size())]); break;
      case 1:
        if (!text.empty()) text.erase(std::min(at, text.size() - 1), 1 + pick(8));
        break;
      case 2:
        if (at < text.size()) text[at] = static_cast<char>(rng() % 256);
        break;
      case 3: {  // repeat a slice somewhere else
        const size_t from = pick(text.size());
        text.insert(at, text.substr(from, 1 + pick(40)));
        break;
      }
      default: text.insert(at, "\n  "); break;
    }
  }
  return text;
}

}  // namespace

TEST_CASE("mutated example profiles load or fail with a ProfileError, never anything else") {
  moepage::test::TempDir dir;
  const fs::path configs = moepage::test::source_path("configs");
  std::vector<std::string> originals;
  for (const auto& entry : fs::directory_iterator(configs)) {
    if (entry.path().extension() != ".yaml") continue;
    originals.push_back(read_text(entry.path()));
    dir.write(entry.path().filename().string(), originals.back());  // bases resolve next to the mutant
  }
  REQUIRE_FALSE(originals.empty());

  std::mt19937 rng(20261130);
  int loaded = 0, refused = 0;
  for (int i = 0; i < 600; ++i) {
    const std::string text = mutate(originals[i % originals.size()], rng);
    const fs::path file = dir.write("mutant.yaml", text);
    try {
      moepage::profile::load_profile(file, std::span<const std::string>{}, dir.path());
      ++loaded;
    } catch (const moepage::profile::ProfileError& e) {
      ++refused;
      CHECK(std::string(e.what()).find('\n') == std::string::npos);  // one line
    } catch (const std::exception& e) {
      FAIL("a mutant escaped with " << typeid(e).name() << ": " << e.what() << "\n--- input ---\n" << text);
    }
  }
  CHECK(loaded + refused == 600);
  CHECK(refused > 0);
}
