#include "cli/cli_common.hpp"

#include <charconv>
#include <iostream>
#include <sstream>

#include "host/log.hpp"

namespace moepage::cli {
namespace po = boost::program_options;
namespace {
bool g_level_from_command_line = false;
}

bool log_level_set_by_command_line() { return g_level_from_command_line; }

spdlog::level::level_enum log_level_from_name(const std::string& level, std::string_view origin) {
  static const std::pair<std::string_view, spdlog::level::level_enum> kLevels[] = {
      {"trace", spdlog::level::trace}, {"debug", spdlog::level::debug}, {"info", spdlog::level::info},
      {"warn", spdlog::level::warn},   {"error", spdlog::level::err},   {"off", spdlog::level::off}};
  for (const auto& [name, value] : kLevels) {
    if (level == name) return value;
  }
  throw UsageError(std::string(origin) + ": unknown log level '" + level +
                   "' (expected trace, debug, info, warn, error or off)");
}

std::optional<int64_t> integer_option(const po::variables_map& vm, const char* key, int64_t low, int64_t high) {
  if (!vm.count(key)) return std::nullopt;
  const std::string text = vm[key].as<std::string>();
  int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value < low || value > high) {
    throw UsageError("--" + std::string(key) + ": expected an integer from " + std::to_string(low) + " to " +
                     std::to_string(high) + ", got '" + text + "'");
  }
  return value;
}

void set_command_line_log_level(const std::string& level) {
  host::set_log_level(log_level_from_name(level, "--log-level"));
  g_level_from_command_line = true;
}

std::unique_ptr<host::DeviceService> make_device_service(const std::string& device, const std::string& origin,
                                                         int device_index) {
  if (device == "cpu") return host::make_cpu_device_service();
  if (device != "hip") throw std::runtime_error(origin + ": '" + device + "' is not a device (expected cpu or hip)");
#if defined(MOEPAGE_GPU_ENABLED)
  try {
    return host::make_hip_device_service(device_index);
  } catch (const std::exception& e) {
    throw std::runtime_error(origin + ": 'hip' cannot be used: " + e.what());
  }
#else
  (void)device_index;
  throw std::runtime_error(origin +
                           ": 'hip' is not in this build (configure with -DMOEPAGE_GPU=hip-nvidia or hip-amd)");
#endif
}

int device_count(const std::string& device) {
#if defined(MOEPAGE_GPU_ENABLED)
  if (device == "hip") return host::hip_device_count();
#endif
  return device == "cpu" ? 1 : 0;
}

std::string built_devices_text() {
#if defined(MOEPAGE_GPU_ENABLED)
  return "cpu, hip (" + host::describe_hip_devices() + ")";
#else
  return "cpu (hip needs a build with -DMOEPAGE_GPU=hip-nvidia or hip-amd)";
#endif
}

std::vector<std::string> strings_of(const po::variables_map& vm, const char* key) {
  return vm.count(key) ? vm[key].as<std::vector<std::string>>() : std::vector<std::string>{};
}

std::string command_help(const CommandSpec& spec) {
  std::ostringstream out;
  out << "usage: " << spec.usage << "\n\n" << spec.summary << "\n\n" << spec.options;
  return out.str();
}

std::optional<po::variables_map> parse_command(CommandSpec& spec, int argc, char** argv) {
  spec.options.add_options()("help,h", "show this help and exit")(
      "log-level", po::value<std::string>()->value_name("LEVEL"),
      "trace, debug, info, warn, error or off (default info)");
  po::variables_map vm;
  po::store(po::command_line_parser(argc, argv).options(spec.options).positional(spec.positional).run(), vm);
  if (vm.count("help")) {
    std::cout << command_help(spec);
    return std::nullopt;
  }
  po::notify(vm);  // after --help, so "moepage run --help" works without --profile
  if (vm.count("log-level")) set_command_line_log_level(vm["log-level"].as<std::string>());
  return vm;
}

}  // namespace moepage::cli
