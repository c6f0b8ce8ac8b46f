#include "output/output_file.hpp"

#include <sys/stat.h>
#include <unistd.h>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <iostream>

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
  struct stat st {};
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

namespace {

// std::cout's buffer once install_checked_stdout() ran: 64 KiB, written with write(2); the first
// failure's errno is kept and later output is dropped (the command fails at check_stdout()).
class CheckedStdoutBuf final : public std::streambuf {
 public:
  CheckedStdoutBuf() { setp(buffer_, buffer_ + sizeof buffer_); }
  int first_error() const { return error_; }

 protected:
  int_type overflow(int_type c) override {
    if (!drain()) return traits_type::eof();
    if (!traits_type::eq_int_type(c, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(c);
      pbump(1);
    }
    return traits_type::not_eof(c);
  }
  int sync() override { return drain() ? 0 : -1; }

 private:
  bool drain() {
    const char* p = pbase();
    while (error_ == 0 && p < pptr()) {
      const ssize_t n = ::write(STDOUT_FILENO, p, size_t(pptr() - p));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) error_ = n < 0 ? errno : EIO;
      else p += n;
    }
    setp(buffer_, buffer_ + sizeof buffer_);
    return error_ == 0;
  }

  char buffer_[1 << 16];
  int error_ = 0;
};

CheckedStdoutBuf* g_stdout_buf = nullptr;

}  // namespace

void install_checked_stdout() {
  // Never destroyed: std::cout is flushed at exit, after every static of this program is gone.
  g_stdout_buf = new CheckedStdoutBuf;
  std::cout.rdbuf(g_stdout_buf);
}

void check_stdout() {
  std::cout.flush();
  errno = 0;
  const bool flushed = std::fflush(stdout) == 0;  // anything written through stdio
  int err = g_stdout_buf != nullptr ? g_stdout_buf->first_error() : 0;
  if (err == 0 && (!flushed || std::ferror(stdout))) err = errno ? errno : EIO;
  if (err == 0 && !std::cout) err = EIO;
  if (err != 0) throw OutputError(std::string("standard output: cannot write: ") + std::strerror(err));
}

}  // namespace moepage::output
