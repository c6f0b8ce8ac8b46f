// Runs the built `moepage` binary as a child process and collects its exit code, stdout and
// stderr. MOEPAGE_PLUGIN_PATH is cleared so only this build's plugin folder is found.
#pragma once
#include <sys/wait.h>
#include <unistd.h>
#include <csignal>

#include <cstdio>
#include <filesystem>
#include <initializer_list>
#include <sstream>
#include <string>
#include <vector>

#include "fileio/text_file.hpp"
#include "support/temp_dir.hpp"
#include "support/test_paths.hpp"

namespace moepage::test {

// Whether a child's output holds `part`.
inline bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

struct ChildResult {
  int exit_code = -1;  // -1 when killed by a signal
  int signal = 0;      // the signal that killed it, or 0
  std::string out;
  std::string err;
};

// The ids of `moepage run`'s "token ids: 1 2 3" line (an empty list when it has none).
inline std::vector<int32_t> ids_line(const std::string& out) {
  std::vector<int32_t> ids;
  const size_t at = out.find("token ids:");
  if (at == std::string::npos) return ids;
  std::istringstream line(out.substr(at + 10, out.find('\n', at) - at - 10));
  for (int32_t v; line >> v;) ids.push_back(v);
  return ids;
}

// The folder the fake arch + pager of tests/cli are built into.
inline std::string fake_stack_dir() { return build_path("cli-fake-plugins").string(); }

inline std::string shell_quote(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// `stdout_to`, when not empty, is a file the child's stdout is redirected to (e.g. /dev/full).
inline ChildResult run_moepage(const std::vector<std::string>& args, const std::string& stdout_to = "") {
  const TempFile err_holder("cli-test-err");
  const std::filesystem::path& err_file = err_holder.path();
  std::string command = "env -u MOEPAGE_PLUGIN_PATH " + shell_quote(moepage_exe().string());
  for (const std::string& a : args) command += " " + shell_quote(a);
  command += " 2>" + shell_quote(err_file.string());
  if (!stdout_to.empty()) command += " >" + shell_quote(stdout_to);

  ChildResult result;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return result;
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) result.out.append(buffer, n);
  const int status = ::pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result.err = fileio::try_read_file(err_file).value_or("");
  return result;
}

// A `moepage` child that runs while the test watches its stdout: to send it a signal, or change
// its files, once it has started generating.
class RunningMoepage {
 public:
  explicit RunningMoepage(const std::vector<std::string>& args) {
    int fds[2];
    if (::pipe(fds) != 0) return;
    std::vector<std::string> argv{moepage_exe().string()};
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<char*> cargv;
    for (auto& a : argv) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(fds[1], STDOUT_FILENO);
      std::FILE* err = std::fopen(err_file_.c_str(), "w");
      if (err) ::dup2(::fileno(err), STDERR_FILENO);
      ::close(fds[0]);
      ::close(fds[1]);
      ::unsetenv("MOEPAGE_PLUGIN_PATH");
      ::execv(cargv[0], cargv.data());
      ::_exit(127);
    }
    ::close(fds[1]);
    out_fd_ = fds[0];
  }
  ~RunningMoepage() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    if (out_fd_ >= 0) ::close(out_fd_);
  }
  RunningMoepage(const RunningMoepage&) = delete;
  RunningMoepage& operator=(const RunningMoepage&) = delete;

  // Reads stdout until it holds `text` (true) or ends (false); an empty `text` waits for any byte.
  bool wait_for_output(const std::string& text) {
    char buffer[4096];
    while (out_.empty() || out_.find(text) == std::string::npos) {
      const ssize_t n = ::read(out_fd_, buffer, sizeof buffer);
      if (n <= 0) return false;
      out_.append(buffer, size_t(n));
    }
    return true;
  }
  void send(int signo) { ::kill(pid_, signo); }
  // Reads the rest of stdout and waits for the exit.
  ChildResult finish() {
    ChildResult r;
    char buffer[4096];
    ssize_t n;
    while ((n = ::read(out_fd_, buffer, sizeof buffer)) > 0) out_.append(buffer, size_t(n));
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    r.out = out_;
    r.err = fileio::try_read_file(err_file_).value_or("");
    return r;
  }

 private:
  pid_t pid_ = -1;
  int out_fd_ = -1;
  std::string out_;
  TempFile err_holder_{"cli-running-err"};
  const std::filesystem::path& err_file_ = err_holder_.path();
};

}  // namespace moepage::test
