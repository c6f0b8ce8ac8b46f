// Reading a `moepage run` child's output: ids, the timing line, --stats-json, and derived rates.
#include <doctest/doctest.h>

#include <stdexcept>
#include <string>

#include "ablate/measurement.hpp"

using namespace moepage::ablate;

TEST_CASE("token ids come from the last 'token ids:' line") {
  CHECK(parse_token_ids("some text\ntoken ids: 5 7 11\n", "run") == std::vector<int32_t>{5, 7, 11});
  CHECK(parse_token_ids("token ids: 1\ntoken ids: 2 3\n", "run") == std::vector<int32_t>{2, 3});
  CHECK_THROWS_WITH_AS(parse_token_ids("nothing\n", "arm 'a'"),
                       "arm 'a': no 'token ids:' line in the output of moepage run", std::runtime_error);
  CHECK_THROWS_AS(parse_token_ids("token ids: 1 x\n", "run"), std::runtime_error);
}

TEST_CASE("the timing line gives prompt tokens and both phase times, in either log format") {
  Measurement m;
  m.generated = 17;
  REQUIRE(parse_timing_line(
      "[info] run: model x\n[info] run: prefill 8 tokens in 0.250 s; decode 17 tokens in 2.000 s\n", m));
  CHECK(m.prompt_tokens == 8);
  CHECK(m.prefill_seconds == doctest::Approx(0.25));
  CHECK(m.decode_seconds == doctest::Approx(2.0));
  // 16 decode forwards (the first token comes from the prefill's logits) in 2 s.
  CHECK(*m.decode_tok_s() == doctest::Approx(8.0));
  CHECK(*m.prefill_tok_s() == doctest::Approx(32.0));
  CHECK(*m.ms_per_token() == doctest::Approx(125.0));
  Measurement rates;
  REQUIRE(parse_timing_line("run: prefill 4 tokens in 0.018 s (223.6 tok/s); decode 5 tokens in 0.016 s (313.80 tok/s)",
                            rates));
  CHECK(rates.prompt_tokens == 4);
  CHECK(rates.prefill_seconds == doctest::Approx(0.018));
  CHECK(rates.decode_seconds == doctest::Approx(0.016));
  Measurement none;
  CHECK_FALSE(parse_timing_line("no timing here", none));
}

TEST_CASE("stats json fills the pager counters, the precise times and derived rates") {
  Measurement m;
  m.prompt_tokens = 1;
  apply_stats_json(R"({"pager": {"accesses": 100, "hits": 75, "misses": 25, "bytes_read": 4000, "read_ns": 3000000,
                       "wait_ns": 0, "prefetch_issued": 9, "prefetch_used": 6, "prefetch_wasted": 3,
                       "slots_per_layer": 12, "resident": false},
                       "layers": [{"layer": 0, "accesses": 100, "hits": 75, "misses": 25}],
                       "run": {"prompt_tokens": 4, "generated_tokens": 6, "prefill_seconds": 0.5,
                               "decode_seconds": 1.25}})",
                   "stats.json", m);
  REQUIRE(m.pager);
  CHECK(m.pager->hits == 75);
  CHECK(m.pager->prefetch_used == 6);
  CHECK(m.pager->prefetch_wasted == 3);
  CHECK(m.pager->slots_per_layer == 12);
  CHECK_FALSE(m.pager->resident);
  CHECK(m.prompt_tokens == 4);
  CHECK(m.generated == 6);
  CHECK(m.decode_seconds == doctest::Approx(1.25));
  CHECK(*m.hit_rate() == doctest::Approx(0.75));
  CHECK(*m.bytes_per_token() == doctest::Approx(400.0));
  CHECK(*m.expert_io_ms_per_token() == doctest::Approx(0.3));
  CHECK_FALSE(m.load_seconds);
}

TEST_CASE("the load time measured by the run replaces the wall-time estimate") {
  Measurement m;
  m.load_is_estimate = true;
  apply_stats_json(R"({"pager": {"accesses": 1, "hits": 1}, "run": {"prefill_seconds": 0.5, "decode_seconds": 1.0,
                       "load_seconds": 0.125}})",
                   "stats.json", m);
  REQUIRE(m.load_seconds);
  CHECK(*m.load_seconds == doctest::Approx(0.125));
  CHECK_FALSE(m.load_is_estimate);
}

TEST_CASE("malformed stats json is an error naming the file") {
  Measurement m;
  std::string message;
  try {
    apply_stats_json("{not json", "/tmp/x.stats.json", m);
  } catch (const std::runtime_error& e) {
    message = e.what();
  }
  CHECK(message.find("/tmp/x.stats.json: not valid JSON") == 0);
}

TEST_CASE("without pager statistics the pager-derived rates are unknown") {
  Measurement m;
  m.prompt_tokens = 3;
  m.generated = 1;
  CHECK_FALSE(m.hit_rate());
  CHECK_FALSE(m.bytes_per_token());
  CHECK_FALSE(m.decode_tok_s());  // one token: no decode forward to time
}
