// Trace format v4 (one line per call): it must give the Trace its v3 equivalent gives, field for
// field, and refuse each kind of bad line with the file, the line number and what was expected.
#include <doctest/doctest.h>

#include <string>

#include "moepage/pager_core/simulator.hpp"
#include "moepage/pager_core/trace.hpp"
#include "trace_error.hpp"

using namespace moepage::pager;

namespace {

// Token 0: hints for layers 0 and 1, a prediction for layer 1 after layer 0's request, and two
// requests of layer 2 that a hint between them keeps apart; token 2 (token 1 left out) predicts
// again. Every kind of event and every boundary rule of v3 appears.
constexpr const char* kV3 =
    "# moepage-trace v3 layers=3 experts=8 top_k=2 model=m\n"
    "token,layer,expert\n"
    "hint,0,0,5,0\n"
    "hint,0,0,1,1\n"
    "hint,0,1,2,0\n"
    "0,0,1\n"
    "0,0,5\n"
    "predict,0,1,7,0\n"
    "predict,0,1,2,1\n"
    "predict,0,1,0,2\n"
    "0,1,2\n"
    "0,1,7\n"
    "0,2,3\n"
    "hint,0,2,4,0\n"
    "0,2,4\n"
    "2,0,6\n"
    "2,0,0\n"
    "predict,2,1,3,0\n"
    "2,1,3\n"
    "2,1,4\n";

constexpr const char* kV4 =
    "# moepage-trace v4 layers=3 experts=8 top_k=2 model=m\n"
    "t 0\n"
    "h 0 5 1\n"
    "h 1 2\r\n"
    "a 0 1 5\n"
    "# a comment, then a blank line\n"
    "\n"
    "p 1 7 2 0\n"
    "a 1 2 7\n"
    "a 2 3\n"
    "h 2 4\n"
    "a 2 4\n"
    "t 2\n"
    "a 0 6 0\n"
    "p 1 3\n"
    "a 1 3 4\n";

void check_same(const Trace& a, const Trace& b) {
  CHECK(a.meta.layers == b.meta.layers);
  CHECK(a.meta.experts == b.meta.experts);
  CHECK(a.meta.top_k == b.meta.top_k);
  CHECK(a.has_outcomes == b.has_outcomes);
  CHECK(a.rows == b.rows);
  CHECK(a.hints == b.hints);
}

std::string error_of(const std::string& text) { return testing::trace_error(text, "bad.trace"); }

}  // namespace

TEST_CASE("a v4 trace gives the same Trace as its v3 equivalent") {
  const Trace v3 = parse_trace(kV3, "s.v3");
  const Trace v4 = parse_trace(kV4, "s.v4");
  CHECK(v3.meta.version == 3);
  CHECK(v4.meta.version == 4);
  REQUIRE(v3.rows.size() == 10);
  REQUIRE(v3.hints.size() == 8);
  check_same(v3, v4);
  // Spot checks against the text, so a fault shared by both readers still shows.
  CHECK(v4.hints[3].source == HintSource::Predictor);
  CHECK(v4.hints[4].rank == 1);
  CHECK(v4.hints[3].before_row == 2);
  CHECK(v4.hints[6].layer == 2);
  CHECK(v4.hints[6].before_row == 5);
  CHECK(v4.rows[9].token == 2);
  CHECK(v4.hints[7].before_row == 8);
  // The simulator (which infers requests from the rows and hints) sees the same traces.
  PolicySpec lru_prefetch{PolicyKind::Lru, 0.0};
  lru_prefetch.prefetch_predictions = true;
  for (const PolicySpec& policy :
       {PolicySpec{PolicyKind::Lru, 0.0}, lru_prefetch, PolicySpec{PolicyKind::Belady, 0.0}}) {
    const SimResult a = simulate(v3, 1, policy), b = simulate(v4, 1, policy);
    CHECK(a.misses == b.misses);
    CHECK(a.accesses == b.accesses);
    CHECK(a.prefetch_reads == b.prefetch_reads);
  }
}

TEST_CASE("a trace read from v4 and written with the row writers reads back as v3") {
  const Trace v4 = parse_trace(kV4, "s.v4");
  std::string text = trace_header(v4.meta);
  CHECK(text == "# moepage-trace v3 layers=3 experts=8 top_k=2\n");
  char buf[64];
  size_t h = 0;
  for (size_t r = 0; r <= v4.rows.size(); ++r) {
    for (; h < v4.hints.size() && v4.hints[h].before_row <= r; ++h)
      text.append(buf, format_trace_hint(v4.hints[h], buf));
    if (r < v4.rows.size()) text.append(buf, format_trace_row(v4.rows[r], false, buf));
  }
  check_same(parse_trace(text, "again.v3"), v4);
}

TEST_CASE("v4 takes the largest token and a request of one layer again after another layer or a hint") {
  const Trace t = parse_trace(
      "# moepage-trace v4 layers=2 experts=4\nt 18446744073709551615\na 0 1\na 1 2\na 0 1\nh 1 3\na 0 2\n", "ok.trace");
  REQUIRE(t.rows.size() == 4);
  CHECK(t.rows[0].token == 18446744073709551615ull);
  CHECK(t.rows[2].expert == 1);
  CHECK(t.hints[0].before_row == 3);
}

TEST_CASE("v4 errors name the file, the line and what was expected") {
  const std::string h = "# moepage-trace v4 layers=2 experts=4\n";
  const std::string kinds = "expected 't TOKEN', 'a LAYER EXPERT...', 'h LAYER EXPERT...' or 'p LAYER EXPERT...', got ";
  // Lines of another kind, v3's column names and rows among them.
  CHECK(error_of(h + "t 0\nx 0 1\n") == "bad.trace line 3: " + kinds + "'x 0 1'");
  CHECK(error_of(h + "token,layer,expert\n") == "bad.trace line 2: " + kinds + "'token,layer,expert'");
  CHECK(error_of(h + "t 0\n0,0,1\n") == "bad.trace line 3: " + kinds + "'0,0,1'");
  CHECK(error_of(h + "t\n") == "bad.trace line 2: " + kinds + "'t'");
  // Events before any token.
  CHECK(error_of(h + "a 0 1\n") == "bad.trace line 2: a request before the first 't TOKEN' line");
  CHECK(error_of(h + "h 0 1\n") == "bad.trace line 2: a hint call before the first 't TOKEN' line");
  CHECK(error_of(h + "p 0 1\n") == "bad.trace line 2: a prediction before the first 't TOKEN' line");
  // Tokens: numbers that strictly increase.
  CHECK(error_of(h + "t x\n") == "bad.trace line 2: token 'x' is not a number");
  CHECK(error_of(h + "t -1\n") == "bad.trace line 2: token '-1' is not a number");
  CHECK(error_of(h + "t 18446744073709551616\n") == "bad.trace line 2: token '18446744073709551616' is not a number");
  CHECK(error_of(h + "t 5\nt 4\n") ==
        "bad.trace line 3: token 4 comes after token 5 (each 't' line starts a later token)");
  CHECK(error_of(h + "t 5\nt 5\n") ==
        "bad.trace line 3: token 5 comes after token 5 (each 't' line starts a later token)");
  // Layers and experts.
  CHECK(error_of(h + "t 0\na 2 1\n") == "bad.trace line 3: layer 2 is out of range (layers=2)");
  CHECK(error_of(h + "t 0\nh x 1\n") == "bad.trace line 3: layer 'x' is not a number");
  CHECK(error_of(h + "t 0\np 1 4\n") == "bad.trace line 3: expert 4 is out of range (experts=4)");
  CHECK(error_of(h + "t 0\na 0 1 y\n") == "bad.trace line 3: expert 'y' is not a number");
  CHECK(error_of(h + "t 0\na 0  1\n") == "bad.trace line 3: expert '' is not a number");
  CHECK(error_of(h + "t 0\na 0 1 \n") == "bad.trace line 3: expert '' is not a number");
  CHECK(error_of(h + "t 0\na 0\n") ==
        "bad.trace line 3: expected 'a LAYER EXPERT...' with at least one expert, got 'a 0'");
  // Repeats within one line, and two requests of one layer in a row.
  CHECK(error_of(h + "t 0\na 0 1 2 1\n") ==
        "bad.trace line 3: expert 1 appears twice in one request (token 0, layer 0)");
  CHECK(error_of(h + "t 3\nh 1 0 0\n") ==
        "bad.trace line 3: expert 0 appears twice in one hint call (token 3, layer 1)");
  CHECK(error_of(h + "t 0\np 1 3 2 3\n") ==
        "bad.trace line 3: expert 3 appears twice in one prediction (token 0, layer 1)");
  CHECK(error_of(h + "t 0\na 0 1\na 0 2\n") ==
        "bad.trace line 4: a second request in a row (token 0, layer 0): one line holds the whole request; two "
        "would read back as one");
  // The longest valid line with experts=4 is 2 + 20 + 4 * 2 bytes; one more is refused as such.
  CHECK(error_of(h + "t 0\na 0 " + std::string(26, '0') + "\n") == "(no error)");
  CHECK(error_of(h + "t 0\na 0 " + std::string(27, '0') + "\n") ==
        "bad.trace line 3: the line is 31 bytes, longer than any v4 line with experts=4 (at most 30)");
}
