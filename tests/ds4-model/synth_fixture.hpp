// Helpers for the ds4-model suite: synthesize a tiny checkpoint and rewrite checkpoints.
#pragma once
#include <functional>
#include <optional>

#include "checkpoint/checkpoint.hpp"
#include "checkpoint/safetensors_writer.hpp"
#include "deepseek4/model/config_json.hpp"
#include "deepseek4/model/synth.hpp"
#include "support/temp_dir.hpp"

namespace moepage::testing {

inline ds4::SynthOptions tiny_options(const std::filesystem::path& out, uint64_t seed = 1) {
  ds4::SynthOptions o;
  o.preset = "tiny";
  o.layers = 4;  // sliding, sliding, CSA, HCA; hash layers 0-2 and one scored layer
  o.experts = 8;
  o.seed = seed;
  o.out = out;
  o.progress = false;
  return o;
}

// Copies every tensor of `ck` into one model.safetensors in `dir`, renamed by `rename` (an empty
// name drops the tensor), and copies config.json.
inline void rewrite_single_file(const ckpt::Checkpoint& ck, const std::filesystem::path& dir,
                                const std::function<std::string(const std::string&)>& rename) {
  std::filesystem::create_directories(dir);
  ckpt::SafetensorsWriter w(dir / "model.safetensors");
  std::vector<std::pair<std::string, const ckpt::TensorInfo*>> kept;
  for (const auto& t : ck.tensors()) {
    const std::string name = rename(t.name);
    if (name.empty()) continue;
    w.declare(name, t.dtype, t.shape);
    kept.emplace_back(name, &t);
  }
  w.begin();
  for (const auto& [name, t] : kept) w.write(name, ck.view(*t));
  w.finish();
  std::filesystem::copy_file(ck.dir() / "config.json", dir / "config.json",
                             std::filesystem::copy_options::overwrite_existing);
}

// Synthesizes the tiny checkpoint into `out` and returns its config.
inline ds4::Config synthesize_tiny(const std::filesystem::path& out) {
  ds4::synthesize(tiny_options(out));
  return ds4::load_config_json(out).config;
}

// A tiny checkpoint synthesized into `dir / "full"`, with its config, for tests that cut or
// rename its tensors.
struct TinyCheckpoint {
  test::TempDir dir;
  ds4::Config config;
  ckpt::Checkpoint full;

  explicit TinyCheckpoint(const std::string& tag)
      : dir(tag), config(synthesize_tiny(dir / "full")), full(ckpt::Checkpoint::open(dir / "full")) {}

  // The full checkpoint rewritten into one file in `dir / "cut"` by `rename` (see
  // rewrite_single_file), opened.
  ckpt::Checkpoint cut(const std::function<std::string(const std::string&)>& rename) const {
    rewrite_single_file(full, dir / "cut", rename);
    return ckpt::Checkpoint::open(dir / "cut");
  }
};

}  // namespace moepage::testing
