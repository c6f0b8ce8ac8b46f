// moepage::fileio's whole-file reads: the bytes exactly, and one-line errors naming the path.
#include <doctest/doctest.h>

#include <string>

#include "fileio/text_file.hpp"
#include "support/temp_dir.hpp"

using moepage::fileio::read_file;
using moepage::fileio::try_read_file;

TEST_CASE("a file reads back byte for byte, NUL bytes and all") {
  moepage::test::TempDir dir("fileio");
  const std::string bytes = std::string("line one\r\nline two\n") + std::string(3, '\0') + std::string(70000, 'x');
  const auto path = dir.write("a.txt", bytes);
  CHECK(read_file(path) == bytes);
  CHECK(try_read_file(path) == bytes);
  CHECK(read_file(dir.write("empty", "")).empty());
}

TEST_CASE("a missing file or a folder is nullopt with the system's reason, or an error naming the path") {
  moepage::test::TempDir dir("fileio");
  std::string why;
  CHECK_FALSE(try_read_file(dir / "missing", &why).has_value());
  CHECK(why == "No such file or directory");
  CHECK_FALSE(try_read_file(dir.path(), &why).has_value());
  CHECK(why == "Is a directory");
  CHECK_THROWS_WITH(read_file(dir / "missing"),
                    ((dir / "missing").string() + ": cannot read: No such file or directory").c_str());
}

TEST_CASE("files without a size, such as those in /proc, are read to their end") {
  const auto status = try_read_file("/proc/self/status");
  REQUIRE(status.has_value());
  CHECK(status->find("Pid:") != std::string::npos);
}
