#include "fuzz_entries.hpp"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

#include "ablate/spec.hpp"
#include "cli/generation_config.hpp"

namespace moepage::fuzz {

namespace fs = std::filesystem;

void ablation_spec_input(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  // The spec's folder anchors relative paths. It holds a profile (profile.yaml) and a model folder
  // (model/) so specs naming them get past the existence checks into the arms and prompts.
  static const fs::path source = [] {
    const fs::path dir = fs::temp_directory_path() / ("moepage-fuzz-spec-" + std::to_string(::getpid()));
    fs::create_directories(dir / "model");
    std::ofstream(dir / "profile.yaml") << "pager: {plugin: lru, budget: 1GiB}\ntransport: {plugin: pread}\n";
    std::ofstream(dir / "ids.txt") << "1, 2 3\n4\n";
    return dir / "spec.yaml";
  }();
  try {
    (void)ablate::parse_spec(text, source);
  } catch (const ablate::SpecError& e) {
    // A refusal is one line, whatever the spec's strings hold.
    if (std::string(e.what()).find('\n') != std::string::npos) throw std::logic_error("multi-line spec error");
  }
}

void generation_config_input(const uint8_t* data, size_t size) {
  // The file's text straight into the parser: no file system work per input.
  const std::string text(reinterpret_cast<const char*>(data), size);
  const fs::path path = "fuzz/generation_config.json";
  for (const bool user_set_all : {false, true}) {
    profile::GenerateSettings gen;
    try {
      (void)cli::apply_generation_config_text(text, path, gen, [&](const std::string&) { return user_set_all; });
    } catch (const std::runtime_error&) {
      continue;
    }
    // What was accepted must be usable: the sampler's own preconditions.
    if (!(gen.temperature >= 0.0) || !(gen.top_p > 0.0 && gen.top_p <= 1.0) || gen.max_tokens == 0) {
      throw std::logic_error("generation_config.json accepted values the sampler refuses");
    }
  }
}

}  // namespace moepage::fuzz
