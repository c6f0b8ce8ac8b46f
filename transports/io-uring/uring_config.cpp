#include "uring_config.hpp"

namespace moepage::uring {

namespace {

constexpr int64_t kMaxDepth = 4096;
constexpr int64_t kMaxBuffers = 1024;
constexpr uint64_t kMinBuffer = 4096;
constexpr uint64_t kMaxBuffer = uint64_t{64} << 20;
constexpr uint64_t kMaxStaging = uint64_t{16} << 30;

[[noreturn]] void bad(const std::string& message) { throw mp::Error(MP_ERR_INVALID_ARG, "io-uring: " + message); }

uint32_t in_range(const mp::Options& options, const char* name, int64_t max, const char* what) {
  const int64_t v = options.get_int(name);
  if (v < 1 || v > max) bad(mp::format("option {} = {}: expected 1 to {} {}", name, v, max, what));
  return static_cast<uint32_t>(v);
}

}  // namespace

UringConfig UringConfig::from(const mp::Options& options) {
  UringConfig c;
  c.queue_depth = in_range(options, "queue_depth", kMaxDepth, "reads in flight");
  c.buffers = in_range(options, "buffers", kMaxBuffers, "staging buffers");
  c.buffer_size = options.get_size("buffer_size");
  c.direct = parse_mode(options.get_string("direct"));
  c.fixed_buffers = parse_mode(options.get_string("fixed_buffers"));
  c.sqpoll = options.get_bool("sqpoll");
  c.validate();
  return c;
}

void UringConfig::validate() const {
  if (queue_depth < 1 || queue_depth > kMaxDepth)
    bad(mp::format("option queue_depth = {}: expected 1 to {} reads in flight", queue_depth, kMaxDepth));
  if (buffers < 1 || buffers > kMaxBuffers)
    bad(mp::format("option buffers = {}: expected 1 to {} staging buffers", buffers, kMaxBuffers));
  if (buffer_size < kMinBuffer || buffer_size > kMaxBuffer || buffer_size % kMinBuffer != 0)
    bad(mp::format("option buffer_size = {} bytes: expected a multiple of 4KiB from 4KiB to 64MiB", buffer_size));
  if (uint64_t(buffers) * buffer_size > kMaxStaging)
    bad(mp::format("options buffers x buffer_size = {} bytes of staging: expected at most 16GiB",
                   uint64_t(buffers) * buffer_size));
}

}  // namespace moepage::uring
