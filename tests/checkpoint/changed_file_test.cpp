// A checkpoint file truncated, rewritten or replaced while it is open: dense views keep their
// bytes (no SIGBUS), and reads and the identity check name the file and say what changed.
#include <doctest/doctest.h>

#include <chrono>
#include <cstring>
#include <filesystem>

#include "checkpoint/checkpoint.hpp"
#include "safetensors_bytes.hpp"
#include "support/temp_dir.hpp"

using namespace moepage::ckpt;
using moepage::test::TempDir;
using moepage::test::write_file;
using moepage::testing::safetensors_bytes;

namespace {

const std::string kHeader = R"({"w":{"dtype":"F32","shape":[4,4],"data_offsets":[0,64]}})";

std::vector<uint8_t> pattern() {
  std::vector<uint8_t> data(64);
  for (size_t i = 0; i < data.size(); ++i) data[i] = uint8_t(i * 7 + 3);
  return data;
}

// The message of the CheckpointError `f` throws; fails the test when it throws none.
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const CheckpointError& e) {
    return e.what();
  }
  FAIL("no CheckpointError");
  return {};
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("a dense view keeps its bytes when the file is truncated under it") {
  TempDir dir("changed-truncated");
  const auto path = dir / "model.safetensors";
  write_file(path, safetensors_bytes(kHeader, pattern()));
  const Checkpoint ck = Checkpoint::open(path);
  const auto view = ck.view("w");
  std::filesystem::resize_file(path, 0);  // a mapping of the file would now fault on every access
  REQUIRE(view.size() == 64);
  CHECK(std::memcmp(view.data(), pattern().data(), 64) == 0);
  CHECK(ck.viewed_data(ck.at("w")) == view.data());

  const std::string changed = error_of([&] { ck.check_unchanged(); });
  CHECK(changed == path.string() + ": the file changed while in use (size " + std::to_string(8 + kHeader.size() + 64) +
                       " -> 0 bytes)");
  std::vector<uint8_t> out(64);
  const std::string read = error_of([&] { ck.read(ck.at("w"), out); });
  CHECK(read.rfind(path.string() + ": short read of 64 bytes", 0) == 0);
  CHECK(contains(read, "(the file changed while in use: size "));
}

TEST_CASE("a file rewritten in place or replaced is reported by the identity check") {
  TempDir dir("changed-rewritten");
  const auto path = dir / "model.safetensors";
  write_file(path, safetensors_bytes(kHeader, pattern()));
  {
    const Checkpoint ck = Checkpoint::open(path);
    CHECK_NOTHROW(ck.check_unchanged());
    // Same size, new bytes, a later modification time.
    write_file(path, safetensors_bytes(kHeader, std::vector<uint8_t>(64, 0)));
    std::filesystem::last_write_time(path, std::filesystem::last_write_time(path) + std::chrono::seconds(5));
    CHECK(error_of([&] { ck.check_unchanged(); }) == path.string() + ": the file changed while in use (modified)");
  }
  {
    const Checkpoint ck = Checkpoint::open(path);
    write_file(dir / "other", safetensors_bytes(kHeader, pattern()));
    std::filesystem::rename(dir / "other", path);
    CHECK(error_of([&] { ck.check_unchanged(); }) ==
          path.string() + ": the file changed while in use (replaced by another file)");
  }
  {
    const Checkpoint ck = Checkpoint::open(path);
    std::filesystem::remove(path);
    CHECK(error_of([&] { ck.check_unchanged(); }) == path.string() + ": the file changed while in use (removed)");
  }
}
