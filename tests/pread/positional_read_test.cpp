#include <doctest/doctest.h>

#include <unistd.h>

#include <vector>

#include "positional_read.hpp"

using moepage::pread::read_exact;

TEST_CASE("a descriptor that cannot be read at an offset gives an error naming path, offset and length") {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  std::vector<char> dst(64);
  const auto failure = read_exact(fds[0], "/tmp/a-pipe", 128, 64, dst.data());
  ::close(fds[0]);
  ::close(fds[1]);
  CHECK(failure.status == MP_ERR_IO);
  CHECK(failure.bytes_read == 0);
  CHECK(failure.message == "pread: /tmp/a-pipe: read error at offset 128 (wanted 64 bytes, got 0): Illegal seek");
}

TEST_CASE("reading zero bytes succeeds without touching the descriptor") {
  const auto failure = read_exact(-1, "/nowhere", 0, 0, nullptr);
  CHECK(failure.status == MP_OK);
}
