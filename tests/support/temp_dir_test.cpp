// Temporary folders and files: unique, written as asked, gone afterwards.
#include <doctest/doctest.h>

#include <filesystem>

#include "support/temp_dir.hpp"

namespace fs = std::filesystem;
using namespace moepage::test;

TEST_CASE("a TempDir is a fresh empty folder, removed with its contents at scope exit") {
  fs::path kept;
  {
    TempDir a("support"), b("support");
    CHECK(a.path() != b.path());
    CHECK(fs::is_directory(a.path()));
    CHECK(fs::is_empty(a.path()));
    const fs::path file = a.write("sub/dir/x.txt", "hello");
    CHECK(file == a / "sub/dir/x.txt");
    CHECK(read_file(file) == "hello");
    kept = a.path();
  }
  CHECK_FALSE(fs::exists(kept));
}

TEST_CASE("a TempFile names a file nobody has made yet and removes what the test made there") {
  fs::path kept;
  {
    TempFile f("support");
    CHECK_FALSE(fs::exists(f.path()));
    write_file(f.path(), std::string("\0\1\2", 3));
    CHECK(read_file_bytes(f.path()) == std::vector<uint8_t>{0, 1, 2});
    kept = f.path();
  }
  CHECK_FALSE(fs::exists(kept));
}

TEST_CASE("writing into a folder that does not exist is an error naming the path") {
  CHECK_THROWS_WITH(write_file("/nonexistent-moepage-dir/x", "x"), "/nonexistent-moepage-dir/x: cannot write");
}
