// moepage::fileio's positional reads: the error paths a regular file cannot produce (a pipe) and
// the end of the file. The granule (O_DIRECT's unaligned end of file) is exercised by the odirect
// example's conformance run in tests/sdk: a regular file reads the same with or without it.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <vector>

#include "fileio/positional_read.hpp"
#include "support/temp_dir.hpp"

using moepage::fileio::pread_up_to;
using moepage::fileio::read_range;

namespace {

// A file of `n` bytes 0, 1, 2, ... (mod 256), open for reading; closed and removed at scope exit.
struct CountingFile {
  moepage::test::TempFile file{"fileio"};
  int fd = -1;
  explicit CountingFile(size_t n) {
    std::string bytes(n, '\0');
    for (size_t i = 0; i < n; ++i) bytes[i] = char(i & 0xff);
    moepage::test::write_file(file.path(), bytes);
    fd = ::open(file.path().c_str(), O_RDONLY);
    REQUIRE(fd >= 0);
  }
  ~CountingFile() { ::close(fd); }
};

}  // namespace

TEST_CASE("a descriptor that cannot be read at an offset gives an error naming path, offset and length") {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  std::vector<char> dst(64);
  const auto failure = read_range("pread", fds[0], "/tmp/a-pipe", 128, 64, dst.data());
  ::close(fds[0]);
  ::close(fds[1]);
  CHECK(failure.status == MP_ERR_IO);
  CHECK(failure.bytes_read == 0);
  CHECK(failure.message == "pread: /tmp/a-pipe: read error at offset 128 (wanted 64 bytes, got 0): Illegal seek");
}

TEST_CASE("reading zero bytes succeeds without touching the descriptor") {
  const auto failure = read_range("pread", -1, "/nowhere", 0, 0, nullptr);
  CHECK(failure.status == MP_OK);
}

TEST_CASE("a range past the end of the file is an error that says how much was read") {
  CountingFile f(100);
  std::vector<unsigned char> dst(64);
  const auto r = read_range("pinned-async", f.fd, "f.bin", 60, 64, dst.data());
  CHECK(r.status == MP_ERR_IO);
  CHECK(r.bytes_read == 40);
  CHECK(r.message == "pinned-async: f.bin: unexpected end of file at offset 60 (wanted 64 bytes, got 40)");
  CHECK(dst[0] == 60);
  CHECK(dst[39] == 99);
}

TEST_CASE("an offset beyond what off_t holds is refused as an argument error") {
  CountingFile f(10);
  std::vector<unsigned char> dst(8);
  const auto r = read_range("pread", f.fd, "f.bin", uint64_t{1} << 63, 8, dst.data());
  CHECK(r.status == MP_ERR_INVALID_ARG);
  CHECK(r.message == "pread: f.bin: offset 9223372036854775808 is beyond what the system can address");
}

TEST_CASE("pread_up_to stops at the end of the file without an error") {
  CountingFile f(100);
  std::vector<unsigned char> dst(256);
  const auto r = pread_up_to(f.fd, dst.data(), dst.size(), 10);
  CHECK(r.error == 0);
  CHECK(r.bytes == 90);
  CHECK(dst[89] == 99);
}

TEST_CASE("a failed read reports errno and the bytes read before it") {
  std::vector<unsigned char> dst(16);
  const auto r = pread_up_to(-1, dst.data(), dst.size(), 0);
  CHECK(r.error == EBADF);
  CHECK(r.bytes == 0);
}
