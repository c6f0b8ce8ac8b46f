// One output file of a command. A regular file (or a path that does not exist yet) is written to
// a temporary file beside it and renamed into place by commit(), so a failed or interrupted
// command never leaves a half-written file under the name the user gave; anything else (a
// device such as /dev/null or /dev/stdout, a FIFO) is written in place. Every write, the flush
// and the close are checked: a failure throws OutputError naming the flag, the path and errno.
#pragma once
#include <cstdio>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>

namespace moepage::output {

class OutputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class OutputFile {
 public:
  // `what` names the output in errors: "--stats-json", "the trace". Opens the temporary file
  // now; throws OutputError when it cannot be created.
  OutputFile(std::filesystem::path path, std::string what);
  ~OutputFile();  // removes the temporary file when commit() never ran
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  const std::filesystem::path& path() const { return path_; }
  // The open stream, for callers that format into it (fwrite, fputs); commit() finds any error.
  std::FILE* stream() { return file_; }
  void write(std::string_view bytes);
  // Flushes, syncs and closes the file, then renames it onto path(); throws OutputError.
  void commit();

 private:
  [[noreturn]] void fail(const std::string& action, int err);

  std::filesystem::path path_;
  std::filesystem::path temp_;  // empty when written in place
  std::string what_;
  std::FILE* file_ = nullptr;
};

// Writes `bytes` to `path` through an OutputFile and commits it.
void write_file(const std::filesystem::path& path, std::string_view bytes, const std::string& what);

// Routes std::cout through a buffer that writes with write(2) and keeps the errno of the first
// failed write (stdio's buffered stdout loses it by the time the failure is noticed). Call once,
// first thing in main.
void install_checked_stdout();
// Flushes standard output and throws OutputError ("standard output: cannot write: No space left
// on device") when any write to it failed; every command ends with it.
void check_stdout();

}  // namespace moepage::output
