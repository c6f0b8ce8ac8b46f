// The trace text format: parsing, writing, and errors that name the file and line.
#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include <sys/stat.h>
#include <unistd.h>

#include "moepage/pager_core/errors.hpp"
#include "moepage/pager_core/trace.hpp"
#include "trace_error.hpp"

using namespace moepage::pager;

TEST_CASE("a trace with outcomes parses with its header, comments and column names") {
  const Trace t = parse_trace(
      "# moepage-trace v1 layers=2 experts=8 top_k=2 model=tiny\n"
      "token,layer,expert,hit,prefetched\n"
      "0,0,3,0,0\n"
      "0,0,5,1,1\n"
      "# a comment\n"
      "\n"
      "0,1,5,0,0\r\n"
      "2,0,3,1,0\n",
      "t.csv");
  CHECK(t.meta.layers == 2);
  CHECK(t.meta.experts == 8);
  CHECK(t.meta.top_k == 2);
  CHECK(t.has_outcomes);
  REQUIRE(t.rows.size() == 4);
  CHECK(t.rows[1].expert == 5);
  CHECK(t.rows[1].hit == 1);
  CHECK(t.rows[1].prefetched == 1);
  CHECK(t.rows[2].layer == 1);
  CHECK(t.rows[3].token == 2);
}

TEST_CASE("a routing-only trace has three fields per row and no outcomes") {
  const Trace t = parse_trace("# moepage-trace v1 layers=1 experts=4\n0,0,1\n0,0,2\n1,0,1\n", "r.csv");
  CHECK_FALSE(t.has_outcomes);
  CHECK(t.meta.top_k == 0);
  CHECK(t.rows.size() == 3);
}

TEST_CASE("written rows and header parse back to the same trace") {
  TraceMeta meta{3, 16, 4};
  std::string text = trace_header(meta);
  char buf[64];
  const TraceRow rows[] = {{0, 0, 15, 0, 1}, {0, 2, 3, 1, 0}, {18446744073709551615ull, 1, 0, 1, 1}};
  for (const auto& r : rows) {
    const size_t n = format_trace_row(r, true, buf);
    REQUIRE(n > 0);
    text.append(buf, n);
  }
  const Trace t = parse_trace(text, "w.csv");
  REQUIRE(t.rows.size() == 3);
  CHECK(t.rows[2].token == 18446744073709551615ull);
  CHECK(t.rows[0].prefetched == 1);
  CHECK(t.meta.top_k == 4);
  char tiny[4];
  CHECK(format_trace_row(rows[0], true, tiny) == 0);
}

TEST_CASE("trace errors name the file and the line") {
  auto err = [](const std::string& text) { return testing::trace_error(text, "bad.csv"); };
  const std::string h = "# moepage-trace v1 layers=2 experts=4\n";
  CHECK(err("") == "bad.csv: empty trace (no header line)");
  CHECK(err("0,0,1\n") ==
        "bad.csv line 1: expected the header '# moepage-trace vN layers=L experts=E [top_k=K]', got '0,0,1'");
  CHECK(err("# moepage-trace v5 layers=2 experts=4\n") ==
        "bad.csv line 1: trace format 'v5' is not supported (expected v1, v2, v3 or v4)");
  CHECK(err("# moepage-trace v1 layers=2\n") == "bad.csv line 1: the header needs layers=L and experts=E");
  CHECK(err("# moepage-trace v1 layers=x experts=4\n") ==
        "bad.csv line 1: header field layers needs a number, got 'x'");
  CHECK(err("# moepage-trace v1 layers=2 experts=4000000000\n") ==
        "bad.csv line 1: experts=4000000000 must be in 1..1048576");
  CHECK(err("# moepage-trace v1 layers=2 experts=4 top_k=5\n") == "bad.csv line 1: top_k=5 exceeds experts=4");
  CHECK(err(h + "0,0,1\n0,2,1\n") == "bad.csv line 3: layer 2 is out of range (layers=2)");
  CHECK(err(h + "0,0,4\n") == "bad.csv line 2: expert 4 is out of range (experts=4)");
  CHECK(err(h + "0,0\n") == "bad.csv line 2: expected token,layer,expert[,hit,prefetched], got '0,0'");
  CHECK(err(h + "0,0,1,1\n") == "bad.csv line 2: expected token,layer,expert[,hit,prefetched], got '0,0,1,1'");
  CHECK(err(h + "0,0,1\n0,0,2,1,0\n") == "bad.csv line 3: has 5 fields but earlier rows have 3");
  CHECK(err(h + "0,0,1,2,0\n") == "bad.csv line 2: hit '2' must be 0 or 1");
  CHECK(err(h + "0, 0,1\n") == "bad.csv line 2: layer ' 0' is not a number");
  CHECK(err(h + "-1,0,1\n") == "bad.csv line 2: token '-1' is not a number");
  CHECK(err(h + "99999999999999999999,0,1\n") == "bad.csv line 2: token '99999999999999999999' is not a number");
  CHECK(err(h + "5,0,1\n4,0,1\n") == "bad.csv line 3: token 4 comes after token 5 (tokens must not decrease)");
  CHECK(err(h + "0,0,1\n0,0,2\n0,0,1\n") == "bad.csv line 4: expert 1 appears twice in one request (token 0, layer 0)");
  // The same expert in the next request (another layer in between) is fine.
  CHECK(err(h + "0,0,1\n0,1,1\n0,0,1\n") == "(no error)");
}

TEST_CASE("reading a trace refuses a device, a FIFO and a file past the size limit") {
  auto read_error = [](const std::string& path) {
    try {
      read_trace_file(path);
    } catch (const PagerError& e) {
      return std::string(e.what());
    }
    FAIL("read " << path);
    return std::string();
  };
  CHECK(read_error("/dev/zero") == "/dev/zero: not a regular file");
  const std::string fifo = "/tmp/moepage-trace-fifo-" + std::to_string(::getpid());
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  CHECK(read_error(fifo) == fifo + ": not a regular file");
  ::unlink(fifo.c_str());
  // A sparse file one byte past the limit: refused from its size, nothing read.
  const std::string big = "/tmp/moepage-trace-big-" + std::to_string(::getpid());
  std::FILE* f = std::fopen(big.c_str(), "wb");
  REQUIRE(f != nullptr);
  std::fclose(f);
  std::filesystem::resize_file(big, kMaxTraceFileBytes + 1);
  CHECK(read_error(big) == big + ": the trace is " + std::to_string(kMaxTraceFileBytes + 1) + " bytes; at most " +
                               std::to_string(kMaxTraceFileBytes) + " are read");
  std::remove(big.c_str());
}
