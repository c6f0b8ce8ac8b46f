// MappedIds (hip/mapped_ids.hpp), the host's wait for a router's ids: when the stream has finished
// and the router's stamp never came (a router that wrote nothing, or wrote elsewhere), the wait
// fails with the caller's words and both stamps instead of spinning forever. The path where the
// stamp comes runs in every paged decode step of ds4-hip-forward (arch option direct_hits).
#include <doctest/doctest.h>

#include <string>

#include "deepseek4/hip/device_arena.hpp"
#include "deepseek4/hip/mapped_ids.hpp"

using namespace moepage::ds4::gpu;

namespace {

struct OwnStream {
  Stream s = create_stream();
  ~OwnStream() { destroy_stream(s); }
};

}  // namespace

TEST_CASE("MappedIds: a finished stream without the router's stamp fails naming the layer") {
  MappedIds ids(3, 6);
  OwnStream stream;
  synchronize(stream.s);  // nothing queued: the stream has finished, and no router wrote a row
  const uint32_t stamp = ids.next_stamp();
  int32_t out[6] = {};
  std::string message;
  try {
    ids.await(1, stamp, stream.s, "gpu moe layer 1", out);
  } catch (const GpuError& e) {
    message = e.what();
  }
  CHECK(message.find("gpu moe layer 1") == 0);
  CHECK(message.find("never reached the host") != std::string::npos);
  CHECK(message.find("stamp " + std::to_string(stamp) + ", found 0") != std::string::npos);
  CHECK_THROWS_AS(ids.row_device(3), GpuError);  // past the layers it was made for
}
