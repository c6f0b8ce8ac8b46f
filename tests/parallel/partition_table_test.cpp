// parallel.partition: table: one line of ranks for every layer or one line per layer; every
// mistake is one line naming the key, the file and the line.
#include <doctest/doctest.h>

#include <string>

#include "parallel/partition_table.hpp"
#include "support/temp_dir.hpp"

using moepage::parallel::read_partition_table;
using moepage::test::TempDir;

namespace {
const std::string kKey = "parallel.partition_table (p.yaml:3:3)";
}

TEST_CASE("one line serves every layer; one line per layer gives each its own") {
  const TempDir dir("partition-table");
  dir.write("all.txt", "# experts 0..3\n1 1 0 0\n\n");
  const auto all = read_partition_table(dir.path() / "all.txt", 2, 4, 2, kKey);
  CHECK(all.owner(0, 0) == 1);
  CHECK(all.owner(1, 3) == 0);
  dir.write("each.txt", "0 1 0 1  # layer 0\n1 0 0 1\n");
  const auto each = read_partition_table(dir.path() / "each.txt", 2, 4, 2, kKey);
  CHECK(each.owner(0, 1) == 1);
  CHECK(each.owner(1, 1) == 0);
}

TEST_CASE("bad tables are one-line errors naming the key, the file and the line") {
  const TempDir dir("partition-table-bad");
  const auto fails = [&](const std::string& text, const std::string& part) {
    dir.write("t.txt", text);
    CHECK_THROWS_WITH(read_partition_table(dir.path() / "t.txt", 2, 4, 2, kKey), doctest::Contains(part.c_str()));
    CHECK_THROWS_WITH(read_partition_table(dir.path() / "t.txt", 2, 4, 2, kKey), doctest::Contains(kKey.c_str()));
  };
  fails("0 1 2 1\n", "t.txt:1: '2' is not a rank from 0 to 1");
  fails("0 1 x 1\n", "'x' is not a rank");
  fails("0 1 -1 1\n", "'-1' is not a rank");
  fails("0 1 0\n", "t.txt:1: 3 ranks, the model has 4 experts per layer");
  fails("0 1 0 1\n0 1 0 1\n0 1 0 1\n", "has 3 lines of ranks; give 1 (every layer) or 2 (one per layer)");
  fails("0 0 0 0\n", "rank 1 owns no expert of layer 0");
  fails("0 1 0 1\n0 1 1 1\n", "rank 0 owns 2 experts of layer 0 but 1 of layer 1");
  CHECK_THROWS_WITH(read_partition_table(dir.path() / "missing.txt", 2, 4, 2, kKey),
                    doctest::Contains("cannot read"));
}
