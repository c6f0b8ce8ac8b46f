// What one completion means for one window (transports/io-uring/read_progress.hpp): short reads go
// on, EINTR and EAGAIN are retried a bounded number of times, end of file and errors are told
// apart, and an O_DIRECT refusal is recognised.
#include <doctest/doctest.h>

#include <cerrno>
#include <initializer_list>

#include "read_progress.hpp"

using namespace moepage::uring;

namespace {

ReadProgress window(uint64_t read_length, uint64_t want_end, uint64_t granule = 1) {
  ReadProgress p;
  p.read_length = read_length;
  p.want_end = want_end;
  p.granule = granule;
  return p;
}

}  // namespace

TEST_CASE("a full read is done") {
  ReadProgress p = window(4096, 4096);
  CHECK(p.apply(4096) == Next::kDone);
  CHECK(p.landed == 4096);
}

TEST_CASE("a short read goes on for the rest of the window, then is done") {
  ReadProgress p = window(10000, 10000);
  CHECK(p.apply(3000) == Next::kContinue);
  CHECK(p.landed == 3000);
  CHECK(p.apply(6999) == Next::kContinue);
  CHECK(p.apply(1) == Next::kDone);
  CHECK(p.landed == 10000);
}

TEST_CASE("EINTR and EAGAIN are retried without counting bytes, up to a limit") {
  ReadProgress p = window(100, 100);
  CHECK(p.apply(-EINTR) == Next::kContinue);
  CHECK(p.apply(-EAGAIN) == Next::kContinue);
  CHECK(p.landed == 0);
  CHECK(p.apply(40) == Next::kContinue);  // progress resets the count
  CHECK(p.retries == 0);
  for (uint32_t i = 0; i < kMaxRetries; ++i) REQUIRE(p.apply(-EAGAIN) == Next::kContinue);
  CHECK(p.apply(-EAGAIN) == Next::kError);
  CHECK(p.error == EAGAIN);
}

TEST_CASE("the end of the file before the requested bytes is told apart from an error") {
  ReadProgress p = window(8192, 5000);
  CHECK(p.apply(3000) == Next::kContinue);
  CHECK(p.apply(0) == Next::kEndOfFile);
  ReadProgress q = window(8192, 5000);
  CHECK(q.apply(-EIO) == Next::kError);
  CHECK(q.error == EIO);
}

TEST_CASE("a window read past the end of the file is done when the requested bytes landed") {
  // An O_DIRECT window of two blocks, the request ends in the first, the file in the second.
  ReadProgress p = window(8192, 4000, 4096);
  CHECK(p.apply(5000) == Next::kDone);
}

TEST_CASE("an O_DIRECT read that stops off a block boundary is the end of the file") {
  ReadProgress p = window(8192, 8000, 4096);
  CHECK(p.apply(4096) == Next::kContinue);  // on a boundary: go on
  CHECK(p.apply(100) == Next::kEndOfFile);  // 4196 < 8000 and off a boundary: the file ended
  ReadProgress buffered = window(8192, 8000, 1);
  CHECK(buffered.apply(4196) == Next::kContinue);  // a buffered read may stop anywhere
}

TEST_CASE("EINVAL and EFAULT are a refused O_DIRECT read only when the read was direct") {
  for (const int err : {EINVAL, EFAULT}) {
    ReadProgress direct = window(4096, 4096, 512);
    CHECK(direct.apply(-err) == Next::kDirectRefused);
    CHECK(direct.error == err);
    ReadProgress buffered = window(4096, 4096, 1);
    CHECK(buffered.apply(-err) == Next::kError);
  }
}

TEST_CASE("a result larger than the window (which the kernel never gives) is clamped") {
  ReadProgress p = window(100, 100);
  CHECK(p.apply(1000) == Next::kDone);
  CHECK(p.landed == 100);
}
