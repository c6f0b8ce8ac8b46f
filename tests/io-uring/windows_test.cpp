// The O_DIRECT window arithmetic (transports/io-uring/aligned_windows.hpp): windows are aligned,
// fit a buffer, and their requested parts cover the request exactly once, in order.
#include <doctest/doctest.h>

#include <random>

#include "aligned_windows.hpp"

using namespace moepage::uring;

namespace {

// Every property a plan must have; returns an empty string or what is wrong.
std::string check_plan(uint64_t offset, uint64_t length, uint64_t align, uint64_t window) {
  const WindowPlan plan(offset, length, align, window);
  if (length == 0) return plan.count() == 0 ? "" : "a zero-length request has windows";
  uint64_t next_want = offset, next_read = align_down(offset, align), total = 0;
  for (uint64_t i = 0; i < plan.count(); ++i) {
    const Window w = plan.at(i);
    if (w.read_offset % align != 0 || w.read_length % align != 0) return "window " + std::to_string(i) + " unaligned";
    if (w.read_length == 0 || w.read_length > window) return "window " + std::to_string(i) + " has a bad size";
    if (w.read_offset != next_read) return "window " + std::to_string(i) + " does not follow the previous one";
    if (w.want_offset != next_want) return "window " + std::to_string(i) + " skips or repeats requested bytes";
    if (w.want_offset < w.read_offset || w.want_offset + w.want_length > w.read_offset + w.read_length)
      return "window " + std::to_string(i) + "'s requested bytes lie outside its read";
    if (w.want_length == 0) return "window " + std::to_string(i) + " holds no requested byte";
    if ((i > 0 && w.skip() != 0) || w.skip() >= align) return "padding in the wrong place";
    next_want += w.want_length;
    next_read += w.read_length;
    total += w.read_length;
  }
  if (next_want != offset + length) return "the windows end at " + std::to_string(next_want);
  if (total != plan.bytes_read()) return "bytes_read disagrees with the windows";
  if (plan.bytes_read() - length >= 2 * align) return "more than one block of padding on each side";
  return "";
}

}  // namespace

TEST_CASE("align_down and align_up round to powers of two, and align_up saturates instead of wrapping") {
  CHECK(align_down(4097, 4096) == 4096);
  CHECK(align_down(4096, 4096) == 4096);
  CHECK(align_up(4097, 4096) == 8192);
  CHECK(align_up(4096, 4096) == 4096);
  CHECK(align_up(0, 512) == 0);
  CHECK(align_up(UINT64_MAX - 10, 4096) == align_down(UINT64_MAX, 4096));
  CHECK(is_power_of_two(512));
  CHECK_FALSE(is_power_of_two(0));
  CHECK_FALSE(is_power_of_two(1536));
}

TEST_CASE("buffered windows (alignment 1) are the requested bytes cut at the buffer size") {
  const WindowPlan plan(100, 10000, 1, 4096);
  REQUIRE(plan.count() == 3);
  CHECK(plan.at(0).read_offset == 100);
  CHECK(plan.at(0).read_length == 4096);
  CHECK(plan.at(2).read_offset == 100 + 8192);
  CHECK(plan.at(2).read_length == 10000 - 8192);
  for (uint64_t i = 0; i < 3; ++i) CHECK(plan.at(i).skip() == 0);
  CHECK(plan.bytes_read() == 10000);
}

TEST_CASE("an unaligned range reads whole blocks and finds its bytes inside them") {
  // 1 byte at 4097 with 512-byte blocks: one 512-byte read at 4096, the byte 1 into it.
  const WindowPlan one(4097, 1, 512, 4096);
  REQUIRE(one.count() == 1);
  CHECK(one.at(0).read_offset == 4096);
  CHECK(one.at(0).read_length == 512);
  CHECK(one.at(0).skip() == 1);
  CHECK(one.at(0).into_request(4097) == 0);
  // 10000 bytes at 1000, 4096-byte blocks, 8 KiB buffers: reads [0, 8192) and [8192, 12288).
  const WindowPlan two(1000, 10000, 4096, 8192);
  REQUIRE(two.count() == 2);
  CHECK(two.at(0).read_offset == 0);
  CHECK(two.at(0).want_offset == 1000);
  CHECK(two.at(0).want_length == 8192 - 1000);
  CHECK(two.at(1).read_offset == 8192);
  CHECK(two.at(1).read_length == 4096);
  CHECK(two.at(1).want_length == 11000 - 8192);
  CHECK(two.at(1).into_request(1000) == 8192 - 1000);
  CHECK(two.bytes_read() == 12288);
}

TEST_CASE("aligned ranges need no padding") {
  const WindowPlan plan(8192, 3 * 4096, 4096, 4096);
  REQUIRE(plan.count() == 3);
  for (uint64_t i = 0; i < 3; ++i) {
    CHECK(plan.at(i).skip() == 0);
    CHECK(plan.at(i).want_length == plan.at(i).read_length);
  }
  CHECK(plan.bytes_read() == 3 * 4096);
}

TEST_CASE("zero-length requests have no windows, wherever they point") {
  CHECK(WindowPlan(0, 0, 512, 4096).count() == 0);
  CHECK(WindowPlan(uint64_t{1} << 62, 0, 4096, 4096).count() == 0);
}

TEST_CASE("random ranges: aligned, within a buffer, covering the request exactly once") {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 20000; ++i) {
    const uint64_t align = uint64_t{1} << (rng() % 13);  // 1 to 4096
    const uint64_t window = align * (1 + rng() % 8) * (align < 4096 ? 4096 / align : 1);
    const uint64_t offset = rng() % 3 == 0 ? (uint64_t{1} << 62) + rng() % 100000 : rng() % 100000;
    const uint64_t length = rng() % 5 == 0 ? rng() % 3 : rng() % 60000;
    CAPTURE(offset);
    CAPTURE(length);
    CAPTURE(align);
    CAPTURE(window);
    REQUIRE(check_plan(offset, length, align, window) == "");
  }
}
