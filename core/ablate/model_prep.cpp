// prepare_model: the spec's checkpoint, or one synthesized from its `model.synth` options through
// the Synthesizer the caller passes (the CLI goes through an architecture plugin).
#include <fstream>
#include <iostream>
#include <sstream>

#include "ablate/runner.hpp"
#include "fileio/text_file.hpp"
#include "moepage/pager_core/adapter_file.hpp"

#include <nlohmann/json.hpp>

namespace moepage::ablate {
namespace fs = std::filesystem;
namespace {

// What was asked for, written next to the model so a second run with the same options reuses
// it instead of spending a minute synthesizing the same bytes again.
std::string synth_stamp(const SynthModel& s) {
  std::ostringstream out;
  out << "preset=" << s.preset << " seed=" << s.seed << " experts=" << (s.experts ? std::to_string(*s.experts) : "-")
      << " layers=" << (s.layers ? std::to_string(*s.layers) : "-") << " expert_dtype=" << s.expert_dtype.value_or("-")
      << "\n";
  return out.str();
}

}  // namespace

fs::path prepare_model(const Spec& spec, const fs::path& out_dir, bool progress, const Synthesizer& synthesize) {
  if (!spec.model.synth) return spec.model.path;
  const SynthModel& s = *spec.model.synth;
  const fs::path dir = out_dir / "model";
  const fs::path stamp = dir / "moepage-synth.txt";
  const std::string wanted = synth_stamp(s);
  if (fs::exists(dir / "config.json") && fs::exists(stamp) && fileio::try_read_file(stamp) == wanted) return dir;

  if (!synthesize) throw SpecError(spec.source.string() + ": model.synth: this runner cannot synthesize models");
  fs::remove(stamp);  // a half-written model must not look reusable
  try {
    synthesize(s, dir, progress);
  } catch (const std::exception& e) {
    throw SpecError(spec.source.string() + ": model.synth: " + e.what());
  }
  if (progress) std::cerr << "synthesized " << s.preset << " model into " << dir.string() << "\n";
  std::ofstream(stamp) << wanted;
  return dir;
}

fs::path prepare_adapter(const Spec& spec, const fs::path& model, const fs::path& out_dir) {
  if (!spec.random_adapter) return {};
  const fs::path config_path = model / "config.json";
  nlohmann::json config;
  try {
    config = nlohmann::json::parse(fileio::read_file(config_path));
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(config_path.string() + ": not valid JSON: " + e.what());
  }
  auto key = [&](const char* name) {
    if (!config.contains(name) || !config[name].is_number_unsigned())
      throw std::runtime_error(config_path.string() + ": key '" + name + "' is missing or not a non-negative integer");
    return config[name].get<uint32_t>();
  };
  pager::AdapterModel geometry;
  geometry.n_layers = key("num_hidden_layers");
  geometry.d_model = key("hidden_size");
  geometry.n_experts = key("n_routed_experts");
  geometry.has_experts.assign(geometry.n_layers, 1);  // every DeepSeek-V4 layer has routed experts
  if (spec.random_adapter->rank > geometry.d_model) {
    throw SpecError(spec.source.string() + ": random_adapter.rank: " + std::to_string(spec.random_adapter->rank) +
                    " exceeds the model's hidden size " + std::to_string(geometry.d_model));
  }
  const fs::path path = out_dir / "adapter.hfadpt";
  pager::write_adapter_file(path.string(),
                            pager::random_adapter(geometry, spec.random_adapter->rank, spec.random_adapter->seed));
  return path;
}

}  // namespace moepage::ablate
