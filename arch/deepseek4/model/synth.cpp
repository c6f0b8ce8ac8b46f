// The `moepage synth` driver: plans shards, streams each through SafetensorsWriter, then writes
// the index, config.json and generation_config.json.
#include "deepseek4/model/synth.hpp"

#include <unistd.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>

#include "checkpoint/checkpoint_error.hpp"
#include "checkpoint/shard_index.hpp"
#include "deepseek4/model/synth_tensors.hpp"

namespace moepage::ds4 {
namespace fs = std::filesystem;
namespace {

std::string shard_file_name(uint32_t index, uint32_t count) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "model-%05u-of-%05u.safetensors", index + 1, count);
  return buf;
}

void write_text(const fs::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();  // a full disk shows at the close
  if (!out) throw ckpt::CheckpointError(p.string() + ": cannot write: " + std::strerror(errno));
}

// A progress line on stderr, only when stderr is a terminal, at most a few times a second.
class Progress {
 public:
  Progress(bool enabled, uint64_t total) : enabled_(enabled && ::isatty(2)), total_(total) {}
  void add(uint64_t bytes, const std::string& what) {
    done_ += bytes;
    if (!enabled_) return;
    const auto now = std::chrono::steady_clock::now();
    if (now - last_ < std::chrono::milliseconds(200) && done_ < total_) return;
    last_ = now;
    std::fprintf(stderr, "\rsynth: %5.1f%%  %.2f / %.2f GiB  %-40.40s",
                 100.0 * double(done_) / double(std::max<uint64_t>(1, total_)), double(done_) / double(1ull << 30),
                 double(total_) / double(1ull << 30), what.c_str());
    std::fflush(stderr);
  }
  ~Progress() {
    if (enabled_) std::fprintf(stderr, "\n");
  }

 private:
  bool enabled_;
  uint64_t total_, done_ = 0;
  std::chrono::steady_clock::time_point last_{};
};

}  // namespace

SynthResult synthesize(const SynthOptions& o) {
  if (o.out.empty()) throw std::invalid_argument("synth needs an output folder (--out DIR)");
  const SynthPlan plan = synth_plan(o);
  const Config& c = plan.config;

  // Shard 0 holds the global tensors; shard 1 + L holds layer L (its dense tensors and experts).
  std::vector<std::vector<SynthTensor>> shards(1 + c.num_hidden_layers);
  for (const auto& s : global_tensor_specs(c)) shards[0].push_back(plan_tensor(s, plan, o.spelling));
  for (uint32_t l = 0; l < c.num_hidden_layers; ++l) {
    for (const auto& s : layer_dense_specs(c, l)) shards[1 + l].push_back(plan_tensor(s, plan, o.spelling));
    for (uint32_t e = 0; e < c.n_routed_experts; ++e) {
      for (const auto& s : expert_specs(c, l, e)) shards[1 + l].push_back(plan_tensor(s, plan, o.spelling));
    }
  }
  uint64_t total = 0;
  for (auto& shard : shards) {
    // Generate in file order so the disk sees sequential writes.
    std::sort(shard.begin(), shard.end(),
              [](const SynthTensor& a, const SynthTensor& b) { return a.weight.name < b.weight.name; });
    for (const auto& t : shard) total += stored_bytes(t);
  }

  fs::create_directories(o.out);
  // Replace an earlier synth run's shards (only files of our own naming pattern).
  for (const auto& e : fs::directory_iterator(o.out)) {
    const std::string n = e.path().filename().string();
    if (n.rfind("model-", 0) == 0 && n.find("-of-") != std::string::npos && e.path().extension() == ".safetensors") {
      fs::remove(e.path());
    }
  }

  SynthResult result;
  result.dir = fs::absolute(o.out);
  result.shards = uint32_t(shards.size());
  std::map<std::string, std::string> weight_map;
  Progress progress(o.progress, total);
  for (uint32_t i = 0; i < shards.size(); ++i) {
    const std::string file = shard_file_name(i, result.shards);
    ckpt::SafetensorsWriter w(result.dir / file);
    w.set_metadata("format", "pt");
    for (const auto& t : shards[i]) {
      w.declare(t.weight.name, t.weight.dtype, t.weight.shape);
      weight_map[t.weight.name] = file;
      if (t.has_scale) {
        w.declare(t.scale.name, t.scale.dtype, t.scale.shape);
        weight_map[t.scale.name] = file;
      }
    }
    w.begin();
    for (const auto& t : shards[i]) {
      generate_tensor(t, c, o.seed, w);
      progress.add(stored_bytes(t), t.weight.name);
      result.tensors += t.has_scale ? 2 : 1;
    }
    w.finish();
    result.bytes += w.file_size();
  }
  ckpt::write_shard_index(result.dir, weight_map, total);
  write_text(result.dir / "config.json", released_config_json(plan));
  write_text(result.dir / "generation_config.json",
             "{\n  \"_from_model_config\": true,\n  \"bos_token_id\": " + std::to_string(c.bos_token_id) +
                 ",\n  \"eos_token_id\": " + std::to_string(c.eos_token_id) + ",\n  \"do_sample\": false\n}\n");
  return result;
}

}  // namespace moepage::ds4
