#include "ablate/child_process.hpp"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "fileio/text_file.hpp"

namespace moepage::ablate {
namespace fs = std::filesystem;

std::string ChildResult::describe() const {
  if (signal != 0) return "killed by signal " + std::to_string(signal);
  return "exit code " + std::to_string(exit_code);
}

ChildResult run_child(const std::vector<std::string>& argv, const fs::path& stdout_path, const fs::path& stderr_path) {
  if (argv.empty()) throw std::runtime_error("run_child: empty command");
  // Everything the child needs is prepared before fork: only async-signal-safe calls after it.
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const int out = ::open(stdout_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (out < 0) throw std::runtime_error("cannot create " + stdout_path.string() + ": " + std::strerror(errno));
  const int err = ::open(stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (err < 0) {
    ::close(out);
    throw std::runtime_error("cannot create " + stderr_path.string() + ": " + std::strerror(errno));
  }
  std::fflush(nullptr);
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(out);
    ::close(err);
    throw std::runtime_error(std::string("cannot start ") + argv[0] + ": fork failed: " + std::strerror(errno));
  }
  if (pid == 0) {
    ::dup2(out, STDOUT_FILENO);
    ::dup2(err, STDERR_FILENO);
    const int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, STDIN_FILENO);
    ::execvp(args[0], args.data());
    const char msg[] = "exec failed\n";
    (void)!::write(STDERR_FILENO, msg, sizeof msg - 1);
    ::_exit(127);
  }
  ::close(out);
  ::close(err);
  int status = 0;
  struct rusage usage {};
  pid_t waited;
  do {
    waited = ::wait4(pid, &status, 0, &usage);
  } while (waited < 0 && errno == EINTR);
  ChildResult result;
  result.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (waited < 0) throw std::runtime_error(std::string("waiting for ") + argv[0] + " failed: " + std::strerror(errno));
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.signal = WTERMSIG(status);
  result.peak_rss_bytes = uint64_t(usage.ru_maxrss) * 1024;  // Linux reports KiB
  return result;
}

std::string capture_stdout(const std::vector<std::string>& argv) {
  auto temp_file = [] {
    char name[] = "/tmp/moepage-capture-XXXXXX";
    const int fd = ::mkstemp(name);
    if (fd < 0) throw std::runtime_error(std::string("cannot create a temporary file: ") + std::strerror(errno));
    ::close(fd);
    return fs::path(name);
  };
  const fs::path out_path = temp_file();
  fs::path err_path;
  ChildResult r;
  try {
    err_path = temp_file();
    r = run_child(argv, out_path, err_path);
  } catch (...) {
    fs::remove(out_path);
    if (!err_path.empty()) fs::remove(err_path);
    throw;
  }
  std::string text = fileio::try_read_file(out_path).value_or("");
  const std::string err = fileio::try_read_file(err_path).value_or("");
  fs::remove(out_path);
  fs::remove(err_path);
  if (!r.ok()) {
    std::string cmd;
    for (const auto& a : argv) cmd += (cmd.empty() ? "" : " ") + a;
    const std::string first_line = err.substr(0, err.find('\n'));
    throw std::runtime_error("'" + cmd + "' failed: " + r.describe() + (first_line.empty() ? "" : ": " + first_line));
  }
  return text;
}

}  // namespace moepage::ablate
