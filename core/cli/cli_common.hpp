// What every subcommand shares: exit codes, the usage-error type, the --help/--log-level
// options, and command-line parsing that prints a command's help.
#pragma once
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <spdlog/common.h>
#include <boost/program_options.hpp>

#include "host/device_service.hpp"

namespace moepage::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;
inline constexpr int kExitUsage = 2;

// A command line that does not make sense: exits 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The logger level named `level` (trace, debug, info, warn, error, off); throws UsageError
// naming `origin` (e.g. "--log-level") for anything else.
spdlog::level::level_enum log_level_from_name(const std::string& level, std::string_view origin);
// Applies --log-level to every host logger and remembers that the command line chose it.
void set_command_line_log_level(const std::string& level);
// True once the command line set a level (a profile's log.level then does not override it).
bool log_level_set_by_command_line();

// The description of one subcommand: its usage line, what it does, and its options.
struct CommandSpec {
  std::string usage;    // "moepage run --profile P [options]"
  std::string summary;  // one or two sentences
  boost::program_options::options_description options{"options"};
  boost::program_options::positional_options_description positional;
};

// Adds --help and --log-level to `spec.options`, parses argv (argv[0] is the command name),
// prints the help and returns nullopt for --help, applies --log-level, and returns the values.
std::optional<boost::program_options::variables_map> parse_command(CommandSpec& spec, int argc, char** argv);

// The device service a profile's `device:` value names (cpu | hip). `origin` names where the
// value came from ("profile.yaml: device") for the errors: hip in a MOEPAGE_GPU=none build, or hip
// with no usable GPU (the runtime's message).
std::unique_ptr<host::DeviceService> make_device_service(const std::string& device, const std::string& origin,
                                                         int device_index = 0);
// How many devices of that kind this process sees (1 for cpu; 0 when hip has no usable GPU).
int device_count(const std::string& device);
// The devices this build can run on, e.g. "cpu, hip (hip-nvidia build; 1 GPU(s): 0: NVIDIA H200 (140 GiB))"..
std::string built_devices_text();

// The integer option `key` (declared as po::value<std::string>, so "-1" is never wrapped to a huge
// unsigned value), parsed as a signed decimal and checked against [low, high]; nullopt when the
// option is absent. Throws UsageError "--key: expected an integer from low to high, got 'text'".
std::optional<int64_t> integer_option(const boost::program_options::variables_map& vm, const char* key, int64_t low,
                                      int64_t high);
// The values of a repeatable string option (empty when it was not given).
std::vector<std::string> strings_of(const boost::program_options::variables_map& vm, const char* key);

// The text `--help` prints for a command.
std::string command_help(const CommandSpec& spec);

}  // namespace moepage::cli
