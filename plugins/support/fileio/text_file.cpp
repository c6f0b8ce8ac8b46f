#include "fileio/text_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace moepage::fileio {

std::optional<std::string> try_read_file(const std::filesystem::path& path, std::string* why) {
  auto failed = [why](int err) -> std::optional<std::string> {
    if (why != nullptr) *why = std::strerror(err);
    return std::nullopt;
  };
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return failed(errno);
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    ::close(fd);
    return failed(EISDIR);
  }
  std::string bytes;
  // The size is a hint only: a pipe or /proc file reports 0, a growing file more than it said.
  if (st.st_size > 0) bytes.reserve(size_t(st.st_size));
  char chunk[65536];
  for (;;) {
    const ssize_t got = ::read(fd, chunk, sizeof chunk);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      const int err = errno;
      ::close(fd);
      return failed(err);
    }
    if (got == 0) break;
    bytes.append(chunk, size_t(got));
  }
  ::close(fd);
  return bytes;
}

std::string read_file(const std::filesystem::path& path) {
  std::string why;
  std::optional<std::string> bytes = try_read_file(path, &why);
  if (!bytes) throw std::runtime_error(path.string() + ": cannot read: " + why);
  return std::move(*bytes);
}

}  // namespace moepage::fileio
