// Expert parallelism on the CPU path: ranks as threads of one process, each with its own model
// replica and an expert source that refuses experts the rank does not own. Two and three ranks
// must give the single rank's greedy ids (and its logits, to float rounding), compute every routed
// (token, expert) pair exactly once between them, and fail together, not hang, when one fails.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "abi_collective.hpp"
#include "deepseek4/forward/expert_parallel.hpp"
#include "deepseek4/forward/model.hpp"
#include "parallel/local_group.hpp"
#include "tiny_model.hpp"

using namespace moepage;
using namespace moepage::ds4;

namespace {

constexpr uint32_t kContext = 64;

// Serves only the rank's experts (from the shared resident bytes, which every rank only reads);
// asking for another one is the bug this test looks for.
class OwnedExperts final : public ExpertSource {
 public:
  OwnedExperts(ResidentExpertSource& all, const ExpertOwnership& own, uint32_t rank, int32_t fail_layer = -1)
      : all_(all), own_(own), rank_(rank), fail_layer_(fail_layer) {}
  void acquire(uint32_t layer, const int32_t* experts, uint32_t n, const std::byte** slots) override {
    if (int32_t(layer) == fail_layer_) throw std::runtime_error("test source: read failed on purpose");
    for (uint32_t i = 0; i < n; ++i) {
      if (own_.owner(layer, uint32_t(experts[i])) != rank_)
        throw std::logic_error("rank " + std::to_string(rank_) + " asked for layer " + std::to_string(layer) +
                               " expert " + std::to_string(experts[i]) + ", which it does not own");
      slots[i] = all_.slot(layer, uint32_t(experts[i]));
    }
  }
  uint32_t max_batch() const override { return all_.max_batch(); }

 private:
  ResidentExpertSource& all_;
  const ExpertOwnership& own_;
  uint32_t rank_;
  int32_t fail_layer_;
};

struct Run {
  std::vector<int32_t> ids;
  std::vector<float> logits;  // the prompt's rows, then one row per decode step
  uint64_t routed = 0;
  std::string error;
};

// A prompt of 20 tokens in chunks the model's max_batch cuts further, then 12 greedy steps.
Run generate(Model& m) {
  const Config& c = m.config();
  const size_t V = c.vocab_size;
  Run r;
  std::vector<int32_t> prompt(20);
  for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = int32_t((i * 37 + 11) % V);
  r.logits.resize(prompt.size() * V);
  m.forward(prompt.data(), uint32_t(prompt.size()), r.logits.data(), true);
  std::vector<float> row(r.logits.end() - std::ptrdiff_t(V), r.logits.end());
  for (int step = 0; step < 12; ++step) {
    const int32_t next = int32_t(std::max_element(row.begin(), row.end()) - row.begin());
    r.ids.push_back(next);
    m.forward(&next, 1, row.data(), false);
    r.logits.insert(r.logits.end(), row.begin(), row.end());
  }
  r.routed = m.moe_stats().routed_experts;
  return r;
}

Run single_rank(test::TinyModel& tm, uint32_t max_batch) {
  const Config c = test::tiny_config();
  cpu::ThreadPool pool(1);
  Model m(c, tm.weights(), tm.layout(), &tm.experts(), pool, ModelOptions{kContext, max_batch});
  return generate(m);
}

// Every rank on its own thread; a rank that throws aborts the group (as the host's rank driver
// does), so the others return instead of waiting for it.
std::vector<Run> ranks(test::TinyModel& tm, const ExpertOwnership& own, uint32_t max_batch, int32_t fail_rank = -1,
                       int32_t fail_layer = -1) {
  const Config c = test::tiny_config();
  const uint32_t n = own.ranks();
  // The host's rank group, through the adapter the plugin hands the model (as `moepage run --ranks`).
  parallel::LocalGroup group(n);
  std::vector<std::unique_ptr<AbiCollective>> views;
  for (uint32_t r = 0; r < n; ++r) views.push_back(std::make_unique<AbiCollective>(group.rank(r)));
  std::vector<Run> runs(n);
  std::vector<std::thread> threads;
  for (uint32_t r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      try {
        OwnedExperts source(tm.experts(), own, r, int32_t(r) == fail_rank ? fail_layer : -1);
        cpu::ThreadPool pool(1);
        ModelOptions opt{kContext, max_batch};
        opt.expert_parallel = ExpertParallel{&own, views[r].get(), r};
        Model m(c, tm.weights(), tm.layout(), &source, pool, opt);
        runs[r] = generate(m);
      } catch (const std::exception& e) {
        runs[r].error = e.what();
        views[r]->abort(e.what());
      }
    });
  for (auto& t : threads) t.join();
  return runs;
}

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  REQUIRE(a.size() == b.size());
  double d = 0;
  for (size_t i = 0; i < a.size(); ++i) d = std::max(d, double(std::fabs(a[i] - b[i])));
  return d;
}

void check_like_one_rank(const Run& one, const std::vector<Run>& runs) {
  uint64_t routed = 0;
  for (size_t r = 0; r < runs.size(); ++r) {
    INFO("rank ", r, " of ", runs.size());
    REQUIRE(runs[r].error.empty());
    CHECK(runs[r].ids == one.ids);
    CHECK(max_abs_diff(runs[r].logits, one.logits) < 1e-4);
    routed += runs[r].routed;
  }
  // Between them the ranks computed each routed (token, expert) pair once.
  CHECK(routed == one.routed);
  // The ranks agree bit for bit: they sum the same parts in the same order.
  for (size_t r = 1; r < runs.size(); ++r) CHECK(runs[r].logits == runs[0].logits);
}

}  // namespace

TEST_CASE("two and three CPU ranks give the single rank's greedy ids, each computing only its experts") {
  const Config c = test::tiny_config();
  test::TinyModel tm(c, test::Encoding{Dtype::F8_E4M3, Dtype::I8}, 11);
  for (uint32_t max_batch : {64u, 7u}) {
    INFO("max_batch ", max_batch);
    const Run one = single_rank(tm, max_batch);
    REQUIRE(one.ids.size() == 12);
    CHECK(one.routed > 0);
    const ExpertOwnership two = ExpertOwnership::round_robin(c.num_hidden_layers, c.n_routed_experts, 2);
    CHECK(two.owned(0, 0) == c.n_routed_experts / 2);
    check_like_one_rank(one, ranks(tm, two, max_batch));
    // An uneven table: rank 2 owns most of the experts of even layers and none of layer 1.
    std::vector<uint32_t> table(size_t(c.num_hidden_layers) * c.n_routed_experts);
    for (size_t i = 0; i < table.size(); ++i) {
      const size_t layer = i / c.n_routed_experts, e = i % c.n_routed_experts;
      table[i] = layer == 1 ? uint32_t(e % 2) : layer % 2 == 0 ? (e % 4 == 0 ? 0u : 2u) : uint32_t((e * 7) % 3);
    }
    const ExpertOwnership three(c.num_hidden_layers, c.n_routed_experts, 3, table);
    CHECK(three.owned(1, 2) == 0);
    check_like_one_rank(one, ranks(tm, three, max_batch));
  }
}

TEST_CASE("a rank that fails makes the others fail with its reason instead of waiting for it") {
  const Config c = test::tiny_config();
  test::TinyModel tm(c, test::Encoding{}, 5);
  const ExpertOwnership two = ExpertOwnership::round_robin(c.num_hidden_layers, c.n_routed_experts, 2);
  const std::vector<Run> runs = ranks(tm, two, 64, /*fail_rank=*/1, /*fail_layer=*/3);
  REQUIRE(runs.size() == 2);
  CHECK(runs[1].error.find("read failed on purpose") != std::string::npos);
  CHECK(runs[0].error.find("rank 1 failed") != std::string::npos);
  CHECK(runs[0].error.find("layer 3") != std::string::npos);
}

TEST_CASE("an ownership is checked against its ranks and against the model") {
  const Config c = test::tiny_config();
  CHECK_THROWS_WITH_AS(ExpertOwnership(2, 4, 2, {0, 1, 0, 1, 0, 2, 0, 1}),
                       doctest::Contains("layer 1 expert 1 belongs to rank 2, expected below 2"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(ExpertOwnership(2, 4, 2, {0, 1}), doctest::Contains("2 entries for 2 layers of 4 experts"),
                       std::invalid_argument);
  test::TinyModel tm(c, test::Encoding{}, 5);
  cpu::ThreadPool pool(1);
  parallel::LocalGroup group(2);
  AbiCollective rank0(group.rank(0)), rank1(group.rank(1));
  const ExpertOwnership wrong = ExpertOwnership::round_robin(c.num_hidden_layers + 1, c.n_routed_experts, 2);
  ModelOptions opt{kContext, 64};
  opt.expert_parallel = ExpertParallel{&wrong, &rank0, 0};
  CHECK_THROWS_WITH_AS(Model(c, tm.weights(), tm.layout(), &tm.experts(), pool, opt),
                       doctest::Contains("the expert ownership covers 7 layers"), std::invalid_argument);
  const ExpertOwnership three = ExpertOwnership::round_robin(c.num_hidden_layers, c.n_routed_experts, 3);
  opt.expert_parallel = ExpertParallel{&three, &rank1, 1};
  CHECK_THROWS_WITH_AS(Model(c, tm.weights(), tm.layout(), &tm.experts(), pool, opt),
                       doctest::Contains("rank 1 of an ownership over 3 ranks, but the collective is rank 1 of 2"),
                       std::invalid_argument);
}
