// Runs the built `moepage` binary as a child process and collects its exit code, stdout and
// stderr. MOEPAGE_PLUGIN_PATH is cleared so only this build's plugin folder is found.
#pragma once
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <sstream>
#include <string>
#include <vector>

namespace moepage::test {

struct ChildResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

inline std::string shell_quote(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

inline ChildResult run_moepage(const std::vector<std::string>& args) {
  static std::atomic<int> counter{0};
  const std::filesystem::path err_file = std::filesystem::temp_directory_path() /
                                         ("moepage-cli-test-" + std::to_string(::getpid()) + "-" +
                                          std::to_string(counter++) + ".err");
  std::string command = "env -u MOEPAGE_PLUGIN_PATH " + shell_quote(std::string(MOEPAGE_BINARY_DIR) + "/bin/moepage");
  for (const std::string& a : args) command += " " + shell_quote(a);
  command += " 2>" + shell_quote(err_file.string());

  ChildResult result;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return result;
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) result.out.append(buffer, n);
  const int status = ::pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ostringstream err;
  err << std::ifstream(err_file).rdbuf();
  result.err = err.str();
  std::filesystem::remove(err_file);
  return result;
}

}  // namespace moepage::test
