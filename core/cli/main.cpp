// `moepage`: global options (--version, --help, --log-level) and dispatch to a subcommand.
// Every failure ends here as one line on stderr: "moepage: error: ..." (exit 1) or
// "moepage: usage error: ..." (exit 2).
#include <algorithm>
#include <iostream>
#include <string>
#include <string_view>

#include <boost/program_options/errors.hpp>

#include "cli/cli_common.hpp"
#include "cli/commands.hpp"
#include "moepage/host_api.h"
#include "output/output_file.hpp"

// The project version, from project(moepage VERSION ...) in the top-level CMakeLists.txt.
#ifndef MOEPAGE_VERSION
#error "MOEPAGE_VERSION must come from CMake (core/cli/CMakeLists.txt)"
#endif

namespace {

using namespace moepage::cli;

void print_help(std::ostream& out) {
  out << "usage: moepage [--version] [--help] [--log-level LEVEL] <command> [options]\n\n"
         "Runs Mixture-of-Experts models whose routed experts are paged from disk.\n\ncommands:\n";
  size_t width = 0;
  for (const Command& c : kCommands) width = std::max(width, c.name.size());
  for (const Command& c : kCommands) {
    out << "  " << c.name << std::string(width - c.name.size() + 2, ' ') << c.summary << "\n";
  }
  out << "\nglobal options:\n"
         "  --version          print the version and the plugin ABI, then exit\n"
         "  -h, --help         show this help and exit\n"
         "  --log-level LEVEL  trace, debug, info, warn, error or off (default info)\n\n"
         "Run 'moepage <command> --help' for a command's options.\n";
}

// Messages may carry a newline from a plugin or library; the contract is one line.
std::string one_line(std::string text) {
  std::replace(text.begin(), text.end(), '\n', ' ');
  while (!text.empty() && text.back() == ' ') text.pop_back();
  return text;
}

int dispatch(int argc, char** argv) {
  int i = 1;
  for (; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg.empty() || arg.front() != '-') break;
    if (arg == "--version") {
      std::cout << "moepage " << MOEPAGE_VERSION << " (plugin ABI " << MP_ABI_MAJOR << "." << MP_ABI_MINOR << ")\n";
      return kExitOk;
    }
    if (arg == "--help" || arg == "-h") {
      print_help(std::cout);
      return kExitOk;
    }
    if (arg == "--log-level") {
      if (i + 1 >= argc) throw UsageError("--log-level needs a value");
      set_command_line_log_level(argv[++i]);
      continue;
    }
    if (arg.rfind("--log-level=", 0) == 0) {
      set_command_line_log_level(std::string(arg.substr(12)));
      continue;
    }
    throw UsageError("unknown option '" + std::string(arg) + "' before the command");
  }
  if (i >= argc) {
    print_help(std::cerr);
    return kExitUsage;
  }
  const std::string_view name = argv[i];
  for (const Command& c : kCommands) {
    if (c.name == name) return c.run(argc - i, argv + i);
  }
  std::string known;
  for (const Command& c : kCommands) known += (known.empty() ? "" : ", ") + std::string(c.name);
  throw UsageError("unknown command '" + std::string(name) + "' (commands: " + known + ")");
}

}  // namespace

int main(int argc, char** argv) {
  moepage::output::install_checked_stdout();
  try {
    const int code = dispatch(argc, argv);
    // Tables and text go to stdout: output lost to a full disk or a closed pipe is an error.
    moepage::output::check_stdout();
    return code;
  } catch (const UsageError& e) {
    std::cerr << "moepage: usage error: " << one_line(e.what()) << "\n";
    return kExitUsage;
  } catch (const boost::program_options::error& e) {
    std::cerr << "moepage: usage error: " << one_line(e.what()) << " (see --help)\n";
    return kExitUsage;
  } catch (const std::exception& e) {
    std::cerr << "moepage: error: " << one_line(e.what()) << "\n";
    return kExitError;
  } catch (...) {
    std::cerr << "moepage: error: an unknown exception escaped\n";
    return kExitError;
  }
}
