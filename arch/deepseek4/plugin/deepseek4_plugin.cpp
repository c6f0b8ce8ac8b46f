// The `deepseek4` architecture plugin. probe() already recognises DeepSeek-V4 checkpoints (a
// config.json whose model_type is "deepseek_v4"), so selection by checkpoint works today; the
// forward pass arrives with the deepseek4 CPU plugin issue (#4), and until then create()
// refuses with "not available yet".
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "moepage/cpp/plugin_adapter.hpp"

namespace {

constexpr const char* kNotYet =
    "arch 'deepseek4' is not available yet: loading and running DeepSeek-V4 arrive with the deepseek4 CPU plugin "
    "issue (#4)";

constexpr mp_option_def kOptions[] = {
    mp::option(MP_OPT_INT, "threads", "0", "compute threads; 0 = all cores"),
};

class Deepseek4Arch {
 public:
  Deepseek4Arch(const mp_arch_create_args&, const mp::Options& options) {
    if (options.get_int("threads") < 0)
      throw mp::Error(MP_ERR_INVALID_ARG, "arch 'deepseek4': option 'threads' must be 0 (all cores) or more");
    throw mp::Error(MP_ERR_NOT_AVAILABLE, kNotYet);
  }

  // 10 for a DeepSeek-V4 config.json, 0 for anything else (including unreadable or malformed
  // files: probing only ranks candidates, it never reports errors).
  static int32_t probe(const mp_host_api*, const char* checkpoint_dir) {
    if (checkpoint_dir == nullptr) return 0;
    std::ifstream in(std::filesystem::path(checkpoint_dir) / "config.json");
    if (!in) return 0;
    const nlohmann::json config = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (!config.is_object()) return 0;
    const auto type = config.find("model_type");
    return type != config.end() && type->is_string() && type->get<std::string>() == "deepseek_v4" ? 10 : 0;
  }

  // Unreachable while the constructor refuses; present because the vtable requires them.
  void describe(mp_model_info*) { unavailable(); }
  void expert_catalog(const mp_expert_catalog**) { unavailable(); }
  void bind_pager(const mp_pager_ref*) { unavailable(); }
  void reset() { unavailable(); }
  void forward(const int32_t*, uint32_t, float*, uint32_t) { unavailable(); }

 private:
  [[noreturn]] static void unavailable() { throw mp::Error(MP_ERR_NOT_AVAILABLE, kNotYet); }
};

}  // namespace

MOEPAGE_PLUGIN("deepseek4", "0.1.0",
               mp::make_arch_descriptor<Deepseek4Arch>("deepseek4", "0.1.0", "DeepSeek-V4 mixture of experts",
                                                       MP_CAP_CPU, kOptions))
