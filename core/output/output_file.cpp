#include "output/output_file.hpp"

#include <atomic>
#include <cerrno>
#include <cstring>
#include <iostream>
#include <sys/stat.h>
#include <unistd.h>

namespace moepage::output {
namespace fs = std::filesystem;
namespace {

// A name beside `path` that no other writer in this or another process picks.
fs::path temp_name(const fs::path& path) {
  static std::atomic<unsigned> counter{0};
  fs::path temp = path;
  temp += ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
  return temp;
}

bool written_in_place(const fs::path& path) {
  struct stat st{};
  return ::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode);
}

}  // namespace

OutputFile::OutputFile(fs::path path, std::string what) : path_(std::move(path)), what_(std::move(what)) {
  if (!written_in_place(path_)) temp_ = temp_name(path_);
  const fs::path& target = temp_.empty() ? path_ : temp_;
  file_ = std::fopen(target.c_str(), "wb");
  if (file_ == nullptr) fail("cannot create", errno);
}

OutputFile::~OutputFile() {
  if (file_ != nullptr) std::fclose(file_);
  if (!temp_.empty()) ::unlink(temp_.c_str());
}

void OutputFile::fail(const std::string& action, int err) {
  throw OutputError(what_ + ": " + action + " " + path_.string() + ": " + std::strerror(err));
}

void OutputFile::write(std::string_view bytes) {
  if (file_ == nullptr) throw OutputError(what_ + ": " + path_.string() + " is already closed");
  if (std::fwrite(bytes.data(), 1, bytes.size(), file_) != bytes.size()) fail("cannot write", errno);
}

void OutputFile::commit() {
  if (file_ == nullptr) throw OutputError(what_ + ": " + path_.string() + " is already closed");
  std::FILE* f = file_;
  file_ = nullptr;
  // errno of an earlier failed buffered write is gone by now; fflush repeats the failure.
  const bool flushed = std::fflush(f) == 0 && !std::ferror(f);
  const int flush_err = errno;
  const bool synced = temp_.empty() || ::fsync(::fileno(f)) == 0;
  const int sync_err = errno;
  const bool closed = std::fclose(f) == 0;
  const int close_err = errno;
  if (!flushed) fail("cannot write", flush_err ? flush_err : EIO);
  if (!synced) fail("cannot sync", sync_err);
  if (!closed) fail("cannot close", close_err);
  if (!temp_.empty()) {
    if (::rename(temp_.c_str(), path_.c_str()) != 0) fail("cannot rename the temporary file onto", errno);
    temp_.clear();
  }
}

void write_file(const fs::path& path, std::string_view bytes, const std::string& what) {
  OutputFile out(path, what);
  out.write(bytes);
  out.commit();
}

void check_stdout() {
  std::cout.flush();
  errno = 0;
  const bool flushed = std::fflush(stdout) == 0;
  const int err = errno;
  if (!flushed || std::ferror(stdout) || !std::cout) {
    std::clearerr(stdout);
    std::cout.clear();
    throw OutputError(std::string("standard output: cannot write: ") + std::strerror(err ? err : EIO));
  }
}

}  // namespace moepage::output
