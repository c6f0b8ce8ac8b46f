// The loader's ELF check on its own: real libraries, and damaged copies of one.
#include <doctest/doctest.h>

#include <elf.h>

#include <cstddef>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <stdexcept>
#include <vector>

#include "host/elf_symbols.hpp"
#include "support.hpp"

using moepage::host::elf_exports_function;

namespace {
std::vector<unsigned char> read_all(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}
}  // namespace

TEST_CASE("the entry symbol is found in a plugin and not in a library that exports another name") {
  CHECK(elf_exports_function(loader_test::fake_lib("good", "fake-good"), "moepage_plugin_query"));
  CHECK_FALSE(elf_exports_function(loader_test::fake_lib("good", "fake-good"), "moepage_plugin_quer"));
  CHECK_FALSE(
      elf_exports_function(loader_test::fake_lib("missing-entry", "fake-missing-entry"), "moepage_plugin_query"));
  CHECK(elf_exports_function(loader_test::fake_lib("missing-entry", "fake-missing-entry"), "moepage_plugin_query_v0"));
}

TEST_CASE("a symbol the library only imports does not count as exported") {
  // fake-unresolved calls this function but does not define it.
  CHECK_FALSE(elf_exports_function(loader_test::fake_lib("unresolved", "fake-unresolved"),
                                   "moepage_fake_symbol_nobody_defines"));
}

TEST_CASE("damaged copies of a plugin give an error or an answer, never a crash") {
  const std::vector<unsigned char> good = read_all(loader_test::fake_lib("good", "fake-good"));
  REQUIRE(good.size() > 1024);
  REQUIRE(elf_exports_function(std::span<const unsigned char>(good), "moepage_plugin_query"));
  std::mt19937 rng(20261130);
  int errors = 0;
  for (int round = 0; round < 3000; ++round) {
    std::vector<unsigned char> bad = good;
    // Damage the ELF header or the section header table (where the parser's offsets come from),
    // or truncate the file.
    uint64_t shoff = 0;  // e_shoff of the ELF64 header
    std::memcpy(&shoff, good.data() + offsetof(Elf64_Ehdr, e_shoff), sizeof shoff);
    const int kind = round % 3;
    if (kind == 0) {
      bad[rng() % 64] = static_cast<unsigned char>(rng());
    } else if (kind == 1 && shoff < good.size()) {
      for (int k = 0; k < 4; ++k) bad[shoff + rng() % (good.size() - shoff)] = static_cast<unsigned char>(rng());
    } else {
      bad.resize(rng() % good.size());
    }
    try {
      (void)elf_exports_function(std::span<const unsigned char>(bad), "moepage_plugin_query");
    } catch (const std::runtime_error& e) {
      ++errors;
      CHECK(std::string(e.what()).size() > 0);
    }
  }
  CHECK(errors > 0);  // the damage was real enough to be noticed
}
