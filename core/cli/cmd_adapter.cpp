// `moepage adapter --random --out F`: writes a valid HFADPT v1 predictor with random weights, for
// tests and the neutrality gate (a predictor only steers prefetch, so any valid adapter must leave
// the generated tokens unchanged). The geometry comes from a model's config.json (--model DIR) or
// from --layers, --d-model and --experts. Every DeepSeek-V4 layer has routed experts.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/cli_common.hpp"
#include "cli/commands.hpp"
#include "moepage/pager_core/adapter_file.hpp"
#include "output/output_paths.hpp"

namespace moepage::cli {
namespace po = boost::program_options;
namespace {

// Bounds on a random adapter's geometry (the released models: 43 layers, d_model 4096, 256
// experts) and on the file it makes.
constexpr int64_t kMaxLayers = 256;
constexpr int64_t kMaxDModel = 65536;
constexpr int64_t kMaxExperts = 4096;
constexpr int64_t kMaxRank = 1024;
constexpr uint64_t kMaxFileBytes = uint64_t(1) << 30;

uint32_t config_u32(const nlohmann::json& config, const char* key, const std::filesystem::path& file) {
  if (!config.contains(key) || !config[key].is_number_unsigned())
    throw std::runtime_error(file.string() + ": key '" + key + "' is missing or not a non-negative integer");
  return config[key].get<uint32_t>();
}

}  // namespace

int cmd_adapter(int argc, char** argv) {
  CommandSpec spec;
  spec.usage =
      "moepage adapter --random --out FILE (--model DIR | --layers N --d-model D --experts E) [--rank R] "
      "[--seed S]";
  spec.summary =
      "Writes a valid HFADPT v1 expert-prediction adapter with random weights (for tests and ablations; "
      "fitted adapters come from recorded routing).";
  spec.options.add_options()("random", po::bool_switch(), "random weights (the only mode for now)")(
      "out", po::value<std::string>(), "the adapter file to write")(
      "model", po::value<std::string>(), "a checkpoint folder whose config.json gives the geometry")(
      "layers", po::value<std::string>(), "decoder layers, 2 to 256 (without --model)")(
      "d-model", po::value<std::string>(), "hidden width, 1 to 65536 (without --model)")(
      "experts", po::value<std::string>(), "routed experts per layer, 1 to 4096 (without --model)")(
      "rank", po::value<std::string>()->default_value("16"), "rank of the low-rank predictor (1..min(d_model, 1024))")(
      "seed", po::value<std::string>()->default_value("1"), "seed of the random weights");
  const auto parsed = parse_command(spec, argc, argv);
  if (!parsed) return kExitOk;
  const po::variables_map& vm = *parsed;
  if (!vm["random"].as<bool>()) throw UsageError("adapter: only --random is supported; pass --random");
  if (!vm.count("out")) throw UsageError("adapter: --out FILE is required");

  moepage::pager::AdapterModel model;
  if (vm.count("model")) {
    const std::filesystem::path file = std::filesystem::path(vm["model"].as<std::string>()) / "config.json";
    std::ifstream in(file);
    if (!in) throw std::runtime_error("cannot read " + file.string());
    nlohmann::json config;
    try {
      config = nlohmann::json::parse(in);
    } catch (const nlohmann::json::exception& e) {
      throw std::runtime_error(file.string() + ": not valid JSON: " + e.what());
    }
    model.n_layers = config_u32(config, "num_hidden_layers", file);
    model.d_model = config_u32(config, "hidden_size", file);
    model.n_experts = config_u32(config, "n_routed_experts", file);
  } else {
    if (!vm.count("layers") || !vm.count("d-model") || !vm.count("experts"))
      throw UsageError("adapter: give --model DIR, or all of --layers, --d-model and --experts");
    model.n_layers = uint32_t(*integer_option(vm, "layers", 2, kMaxLayers));
    model.d_model = uint32_t(*integer_option(vm, "d-model", 1, kMaxDModel));
    model.n_experts = uint32_t(*integer_option(vm, "experts", 1, kMaxExperts));
  }
  // The same bounds for a config.json's geometry: the file holds layers x (d_model + experts) x rank.
  if (model.n_layers < 2 || model.n_layers > kMaxLayers || model.d_model == 0 || model.d_model > kMaxDModel ||
      model.n_experts == 0 || model.n_experts > kMaxExperts)
    throw UsageError("adapter: the model needs 2 to " + std::to_string(kMaxLayers) + " layers, a d_model of 1 to " +
                     std::to_string(kMaxDModel) + " and 1 to " + std::to_string(kMaxExperts) + " experts");
  model.has_experts.assign(model.n_layers, 1);
  const uint32_t rank = uint32_t(*integer_option(vm, "rank", 1, std::min<int64_t>(model.d_model, kMaxRank)));
  const uint64_t seed = uint64_t(*integer_option(vm, "seed", 0, INT64_MAX));
  // Half-precision A (rank x d_model) and B (experts x rank) per layer after the first.
  const uint64_t file_bytes = uint64_t(model.n_layers - 1) * rank * (uint64_t(model.d_model) + model.n_experts) * 2;
  if (file_bytes > kMaxFileBytes)
    throw UsageError("adapter: " + std::to_string(model.n_layers) + " layers, d_model " +
                     std::to_string(model.d_model) + ", " + std::to_string(model.n_experts) + " experts and rank " +
                     std::to_string(rank) + " make a " + std::to_string(file_bytes >> 20) +
                     " MiB file; the limit is 1024 MiB (lower --rank)");
  const std::string out = vm["out"].as<std::string>();
  std::vector<output::NamedPath> inputs;
  if (vm.count("model")) inputs = output::files_in(vm["model"].as<std::string>(), "the model's");
  output::check_output_paths({{"--out", out}}, inputs);
  moepage::pager::write_adapter_file(out, moepage::pager::random_adapter(model, rank, seed));
  std::cout << "wrote " << out << ": " << (model.n_layers - 1) << " entries, d_model " << model.d_model << ", "
            << model.n_experts << " experts, rank " << rank << "\n";
  return kExitOk;
}

}  // namespace moepage::cli
