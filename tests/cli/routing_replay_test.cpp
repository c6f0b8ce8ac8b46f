// Routing replay (arch option routing_replay), end to end through `moepage run`: every layer of the
// tiny model takes the experts a hand-made trace names (layer i from trace layer i mod N, position
// p from trace token p mod T), the pager is handed the trace's hints and predictions, and the ids
// do not depend on the pager.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "child_process.hpp"
#include "moepage/pager_core/trace.hpp"
#include "support/temp_dir.hpp"
#include "support/test_paths.hpp"

namespace fs = std::filesystem;
using moepage::test::run_moepage;
using moepage::test::TempDir;

namespace {

constexpr int kTraceLayers = 3, kTraceTokens = 5, kExperts = 64, kTopK = 6;

// Six distinct experts of (token, layer, what), spread over `experts` so that layers differ.
std::vector<int> experts_of(int token, int layer, int what, int experts = kExperts) {
  std::vector<int> e;
  for (int j = 0; e.size() < kTopK; ++j) {
    const int x = (7 * token + 13 * layer + 29 * what + 11 * j * j + j) % experts;
    if (std::find(e.begin(), e.end(), x) == e.end()) e.push_back(x);
  }
  return e;
}

// A v4 trace: layer 0 is hinted (a hash layer), layers 1 and 2 carry predictions.
std::string replay_trace(int experts = kExperts) {
  std::ostringstream t;
  t << "# moepage-trace v4 layers=" << kTraceLayers << " experts=" << experts << " top_k=" << kTopK << "\n";
  auto line = [&](char kind, int layer, const std::vector<int>& e) {
    t << kind << ' ' << layer;
    for (int x : e) t << ' ' << x;
    t << '\n';
  };
  for (int token = 0; token < kTraceTokens; ++token) {
    t << "t " << token << "\n";
    line('h', 0, experts_of(token, 0, 1, experts));
    line('a', 0, experts_of(token, 0, 0, experts));
    for (int l = 1; l < kTraceLayers; ++l) {
      line('p', l, experts_of(token, l, 2, experts));
      line('a', l, experts_of(token, l, 0, experts));
    }
  }
  return t.str();
}

std::vector<std::string> replay_run(const fs::path& trace, const std::string& pager, const fs::path& out) {
  std::vector<std::string> args = {"run",
                                   "--model",
                                   moepage::test::source_path("models/ds4-debian-tiny").string(),
                                   "--set",
                                   "arch.plugin=deepseek4",
                                   "--set",
                                   "arch.routing_replay=" + trace.string(),
                                   "--set",
                                   "arch.replay_predictions=2",
                                   "--set",
                                   "generate.ignore_eos=true",
                                   "--prompt-ids",
                                   "5",
                                   "--max-tokens",
                                   "12",
                                   "--trace",
                                   out.string(),
                                   "--log-level",
                                   "warn"};
  if (pager != "resident") {
    args.insert(args.end(),
                {"--profile", moepage::test::source_path("configs/lru.yaml").string(), "--set", "pager.budget=2MiB"});
  }
  return args;
}

// The architecture's hints of a recorded run, by (position, layer).
std::map<std::pair<uint64_t, uint32_t>, std::set<int>> arch_hints(const fs::path& trace_file) {
  const moepage::pager::Trace live = moepage::pager::read_trace_file(trace_file.string());
  std::map<std::pair<uint64_t, uint32_t>, std::set<int>> hinted;
  for (const auto& h : live.hints)
    if (h.source == moepage::pager::HintSource::Arch) hinted[{h.token, h.layer}].insert(int(h.expert));
  return hinted;
}

std::string id_line(const std::string& out) {
  const size_t at = out.find("token ids:");
  return at == std::string::npos ? "" : out.substr(at, out.find('\n', at) - at);
}

}  // namespace

TEST_CASE("routing replay: each layer takes the trace's experts, mapped by layer mod N and position mod T") {
  const TempDir dir("routing-replay");
  const fs::path trace = dir.write("replay.trace", replay_trace());
  // lru: the resident pager takes no hints, so the trace would record none.
  const auto r = run_moepage(replay_run(trace, "lru", dir / "run.trace"));
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  const moepage::pager::Trace live = moepage::pager::read_trace_file((dir / "run.trace").string());
  REQUIRE(live.meta.layers == 8);

  // Access rows of each (position, layer), and the hint rows the architecture sent.
  std::map<std::pair<uint64_t, uint32_t>, std::set<int>> accessed, hinted;
  for (const auto& row : live.rows) accessed[{row.token, row.layer}].insert(int(row.expert));
  for (const auto& h : live.hints)
    if (h.source == moepage::pager::HintSource::Arch) hinted[{h.token, h.layer}].insert(int(h.expert));
  uint64_t positions = 0;
  for (const auto& [key, experts] : accessed) positions = std::max(positions, key.first + 1);
  CHECK(positions == 12);  // the prompt's token and 11 more, one forward each

  for (uint64_t p = 0; p < positions; ++p)
    for (uint32_t l = 0; l < 8; ++l) {
      CAPTURE(p);
      CAPTURE(l);
      const int token = int(p % kTraceTokens), layer = int(l % kTraceLayers);
      const auto want = experts_of(token, layer, 0);
      CHECK(accessed[{p, l}] == std::set<int>(want.begin(), want.end()));
      // Layer 0's recorded hint before the step; the first two recorded predictions of layers
      // mapped to 1 and 2 when the layer before them is observed (layer 0 has no layer before it).
      std::set<int> hints;
      if (layer == 0) {
        const auto h = experts_of(token, 0, 1);
        hints.insert(h.begin(), h.end());
      } else if (l > 0) {
        const auto pred = experts_of(token, layer, 2);
        hints.insert(pred.begin(), pred.begin() + 2);
      }
      CHECK(hinted[{p, l}] == hints);
    }
}

TEST_CASE("routing replay: the ids do not depend on the pager, and a bad trace is refused naming the file") {
  const TempDir dir("routing-replay-ids");
  const fs::path trace = dir.write("replay.trace", replay_trace());
  const auto resident = run_moepage(replay_run(trace, "resident", dir / "a.trace"));
  const auto lru = run_moepage(replay_run(trace, "lru", dir / "b.trace"));
  REQUIRE_MESSAGE(resident.exit_code == 0, resident.err);
  REQUIRE_MESSAGE(lru.exit_code == 0, lru.err);
  CHECK(!id_line(resident.out).empty());
  CHECK(id_line(resident.out) == id_line(lru.out));

  // 32 experts where the model has 64.
  const fs::path bad = dir.write("wrong.trace", replay_trace(32));
  const auto refused = run_moepage(replay_run(bad, "resident", dir / "c.trace"));
  CHECK(refused.exit_code != 0);
  CHECK(refused.err.find(bad.string()) != std::string::npos);
  CHECK(refused.err.find("32 experts per layer, the model 64") != std::string::npos);

  // A token whose layer 2 was never recorded cannot be replayed.
  std::string gap = replay_trace();
  const size_t last_a = gap.rfind("\na 2 ");
  gap.erase(last_a + 1, gap.find('\n', last_a + 1) - last_a);
  const fs::path holed = dir.write("gap.trace", gap);
  const auto incomplete = run_moepage(replay_run(holed, "resident", dir / "d.trace"));
  CHECK(incomplete.exit_code != 0);
  CHECK(incomplete.err.find("trace token #4 layer 2 has 0 experts") != std::string::npos);
}

TEST_CASE("routing replay: predictions handed at the layer's acquire or finish reach the same layers, same ids") {
  const TempDir dir("routing-replay-early");
  const fs::path trace = dir.write("replay.trace", replay_trace());
  const auto observe = run_moepage(replay_run(trace, "lru", dir / "observe.trace"));
  REQUIRE_MESSAGE(observe.exit_code == 0, observe.err);
  const auto a = arch_hints(dir / "observe.trace");
  CHECK(a.size() > 12);  // hints of layer 0 and of predicted layers at every position
  std::vector<std::string> early_args;
  for (const std::string at : {"acquire", "launched"}) {
    CAPTURE(at);
    early_args = replay_run(trace, "lru", dir / (at + ".trace"));
    early_args.insert(early_args.end(), {"--set", "arch.replay_predictions_at=" + at});
    const auto early = run_moepage(early_args);
    REQUIRE_MESSAGE(early.exit_code == 0, early.err);
    CHECK(id_line(observe.out) == id_line(early.out));
    CHECK(a == arch_hints(dir / (at + ".trace")));
  }
  early_args.insert(early_args.end(), {"--set", "arch.replay_predictions_at=later"});
  const auto refused = run_moepage(early_args);
  CHECK(refused.exit_code != 0);
  CHECK(refused.err.find("replay_predictions_at") != std::string::npos);
}
