// `moepage adapter --random --out F`: writes a valid HFADPT v1 predictor with random weights, for
// tests and the neutrality gate (a predictor only steers prefetch, so any valid adapter must leave
// the generated tokens unchanged). The geometry comes from a model's config.json (--model DIR) or
// from --layers, --d-model and --experts. Every DeepSeek-V4 layer has routed experts.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/cli_common.hpp"
#include "cli/commands.hpp"
#include "moepage/pager_core/adapter_file.hpp"

namespace moepage::cli {
namespace po = boost::program_options;
namespace {

uint32_t config_u32(const nlohmann::json& config, const char* key, const std::filesystem::path& file) {
  if (!config.contains(key) || !config[key].is_number_unsigned())
    throw std::runtime_error(file.string() + ": key '" + key + "' is missing or not a non-negative integer");
  return config[key].get<uint32_t>();
}

}  // namespace

int cmd_adapter(int argc, char** argv) {
  CommandSpec spec;
  spec.usage = "moepage adapter --random --out FILE (--model DIR | --layers N --d-model D --experts E) [--rank R] "
               "[--seed S]";
  spec.summary = "Writes a valid HFADPT v1 expert-prediction adapter with random weights (for tests and ablations; "
                 "fitted adapters come from recorded routing).";
  spec.options.add_options()
      ("random", po::bool_switch(), "random weights (the only mode for now)")
      ("out", po::value<std::string>(), "the adapter file to write")
      ("model", po::value<std::string>(), "a checkpoint folder whose config.json gives the geometry")
      ("layers", po::value<uint32_t>(), "decoder layers (without --model)")
      ("d-model", po::value<uint32_t>(), "hidden width (without --model)")
      ("experts", po::value<uint32_t>(), "routed experts per layer (without --model)")
      ("rank", po::value<uint32_t>()->default_value(16), "rank of the low-rank predictor (1..d_model)")
      ("seed", po::value<uint64_t>()->default_value(1), "seed of the random weights");
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
    model.n_layers = vm["layers"].as<uint32_t>();
    model.d_model = vm["d-model"].as<uint32_t>();
    model.n_experts = vm["experts"].as<uint32_t>();
  }
  if (model.n_layers < 2 || model.d_model == 0 || model.n_experts == 0)
    throw UsageError("adapter: the model needs at least 2 layers, a d_model and experts");
  model.has_experts.assign(model.n_layers, 1);
  const uint32_t rank = vm["rank"].as<uint32_t>();
  if (rank == 0 || rank > model.d_model)
    throw UsageError("adapter: --rank " + std::to_string(rank) + " must be 1.." + std::to_string(model.d_model));
  const std::string out = vm["out"].as<std::string>();
  moepage::pager::write_adapter_file(out, moepage::pager::random_adapter(model, rank, vm["seed"].as<uint64_t>()));
  std::cout << "wrote " << out << ": " << (model.n_layers - 1) << " entries, d_model " << model.d_model << ", "
            << model.n_experts << " experts, rank " << rank << "\n";
  return kExitOk;
}

}  // namespace moepage::cli
