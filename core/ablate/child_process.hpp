// Runs a program with its stdout and stderr sent to files, and reports how it ended, how long it
// took and its peak resident memory (from wait4's rusage, so the child's VmHWM, not ours).
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace moepage::ablate {

struct ChildResult {
  int exit_code = -1;  // -1 when killed by a signal
  int signal = 0;
  double wall_seconds = 0.0;
  uint64_t peak_rss_bytes = 0;
  bool ok() const { return exit_code == 0; }
  std::string describe() const;  // "exit code 1", "killed by signal 9"
};

// argv[0] is the program (a path, or a name looked up in PATH). Throws std::runtime_error when
// the process cannot be started at all (fork/exec failure is reported as exit code 127).
ChildResult run_child(const std::vector<std::string>& argv, const std::filesystem::path& stdout_path,
                      const std::filesystem::path& stderr_path);

// The program's stdout as a string; throws naming the program, its failure and the first line
// it wrote to stderr (its own explanation) when it does not exit 0.
std::string capture_stdout(const std::vector<std::string>& argv);

}  // namespace moepage::ablate
