// prepare_model: the spec's checkpoint, or one synthesized from its `model.synth` options.
#include <fstream>
#include <iostream>
#include <sstream>

#include "ablate/runner.hpp"
#include "deepseek4/model/synth.hpp"

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

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

fs::path prepare_model(const Spec& spec, const fs::path& out_dir, bool progress) {
  if (!spec.model.synth) return spec.model.path;
  const SynthModel& s = *spec.model.synth;
  const fs::path dir = out_dir / "model";
  const fs::path stamp = dir / "moepage-synth.txt";
  const std::string wanted = synth_stamp(s);
  if (fs::exists(dir / "config.json") && fs::exists(stamp) && read_text(stamp) == wanted) return dir;

  ds4::SynthOptions o;
  o.preset = s.preset;
  o.seed = s.seed;
  o.experts = s.experts;
  o.layers = s.layers;
  if (s.expert_dtype) o.expert_format = ds4::weight_format_from_name(*s.expert_dtype);
  o.out = dir;
  o.progress = progress;
  fs::remove(stamp);  // a half-written model must not look reusable
  try {
    const ds4::SynthResult r = ds4::synthesize(o);
    if (progress) std::cerr << "synthesized " << s.preset << " model into " << r.dir.string() << "\n";
  } catch (const std::invalid_argument& e) {
    throw SpecError(spec.source.string() + ": model.synth: " + e.what());
  }
  std::ofstream(stamp) << wanted;
  return dir;
}

}  // namespace moepage::ablate
