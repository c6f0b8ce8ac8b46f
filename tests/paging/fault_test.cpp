// Fail closed: a failed or short read surfaces as an error naming layer, expert, file and offset;
// the slot it was filling is not trusted afterwards, and the next access reads again.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "paging_fixture.hpp"

using namespace moepage::test;

namespace {

void check_fails_closed(const char* fault) {
  CapturingHost host;
  Plugins plugins(host.get());
  SyntheticCatalog model(4, 8, 2);
  const uint64_t bad = model.offset(2, 3, 1);  // layer 2, expert 3, part w2
  auto transport = plugins.transport(
      "fault-inject", {{"fail_offset", std::to_string(bad + 10)}, {"fail_times", "1"}, {"fault", fault}});
  auto pager = plugins.pager("lru", {{"budget", std::to_string(model.budget_for(2))}}, model.catalog, transport);
  // Fill both slots of layer 2 with other experts first, so a trusted failed slot would hold
  // stale bytes of another expert, not zeros.
  acquire(pager, 2, {0, 1});
  try {
    acquire(pager, 2, {3, 0});
    FAIL("a failed read was not reported");
  } catch (const std::exception& e) {
    const std::string what = e.what();
    CHECK(what.find("layer 2 expert 3 (w2)") != std::string::npos);
    CHECK(what.find(model.file_path) != std::string::npos);
    CHECK(what.find("offset " + std::to_string(bad)) != std::string::npos);
  }
  const uint64_t misses_before = pager.stats().misses;
  auto retry = acquire(pager, 2, {3, 0});
  CHECK(model.slot_holds(retry.slots[0], 2, 3));
  CHECK(model.slot_holds(retry.slots[1], 2, 0));
  CHECK(pager.stats().misses == misses_before + 1);  // expert 3 was read again, not trusted
}

}  // namespace

TEST_CASE("an I/O error names layer, expert, file and offset, and the next access reads again") {
  check_fails_closed("eio");
}

TEST_CASE("a short read is never trusted: the next access reads the expert again and gets its bytes") {
  check_fails_closed("short");
}

TEST_CASE("a failed read through pinned-async names the file and offset of the range") {
  CapturingHost host;
  Plugins plugins(host.get());
  SyntheticCatalog model(2, 4, 1);
  auto transport = plugins.transport("pinned-async", {{"threads", "2"}});
  const uint32_t file = transport.open(model.file_path);
  std::vector<uint8_t> dst(64);
  const uint64_t past_end = SyntheticCatalog::file_bytes(2, 4) - 10;
  const mp_read_request r{sizeof(mp_read_request), file, past_end, 64, dst.data(), 0, MP_MEM_HOST, MP_READ_DEMAND, 0};
  const mp_ticket t = transport.submit({&r, 1});
  const std::string expected =
      model.file_path + ": unexpected end of file at offset " + std::to_string(past_end) + " (wanted 64 bytes, got 10)";
  CHECK_THROWS_WITH(transport.wait(t), doctest::Contains(expected.c_str()));
  CHECK(transport.stats().errors == 1);
}

// A status travels unchanged (status.h): the pager fails with what the transport failed with,
// not with io for every failed read.
TEST_CASE("a read the transport fails as internal or device fails acquire with that status") {
  for (const auto& [name, status] : {std::pair{"internal", MP_ERR_INTERNAL}, std::pair{"device", MP_ERR_DEVICE}}) {
    INFO("fail_status = " << name);
    CapturingHost host;
    Plugins plugins(host.get());
    SyntheticCatalog model(4, 8, 2);
    const uint64_t bad = model.offset(2, 3, 1);
    auto transport = plugins.transport(
        "fault-inject", {{"fail_offset", std::to_string(bad + 10)}, {"fail_times", "1"}, {"fail_status", name}});
    auto pager = plugins.pager("paged", {{"budget", std::to_string(model.budget_for(2))}}, model.catalog, transport);
    try {
      acquire(pager, 2, {3, 0});
      FAIL("a failed read was not reported");
    } catch (const mp::PluginError& e) {
      CHECK(e.status() == status);
      CHECK(std::string(e.what()).find("layer 2 expert 3 (w2)") != std::string::npos);
    }
    auto retry = acquire(pager, 2, {3, 0});
    CHECK(model.slot_holds(retry.slots[0], 2, 3));
  }
}

// A real fault rather than an injected one: the file is cut short under the io-uring transport
// (O_DIRECT where the temporary folder takes it, and buffered), so the last expert reads short.
TEST_CASE("through io-uring, a file cut short fails closed naming the expert, and reads again once it is whole") {
  for (const char* direct : {"auto", "off"}) {
    CAPTURE(direct);
    CapturingHost host;
    Plugins plugins(host.get());
    SyntheticCatalog model(4, 8, 2);
    auto transport = plugins.transport("io-uring", {{"direct", direct}, {"buffers", "2"}, {"buffer_size", "4KiB"}});
    auto pager = plugins.pager("lru", {{"budget", std::to_string(model.budget_for(2))}}, model.catalog, transport);
    acquire(pager, 3, {0, 1});
    const uint64_t cut = model.offset(3, 7, 1) + 300;  // layer 3, expert 7, part w2: 300 of its 600 bytes
    const uint64_t size = std::filesystem::file_size(model.file_path);
    std::filesystem::resize_file(model.file_path, cut);
    try {
      acquire(pager, 3, {7, 0});
      FAIL("a short read was not reported");
    } catch (const mp::PluginError& e) {
      const std::string what = e.what();
      CHECK(e.status() == MP_ERR_IO);
      CHECK(what.find("layer 3 expert 7 (w2)") != std::string::npos);
      CHECK(what.find(model.file_path) != std::string::npos);
      CHECK(what.find("unexpected end of file at offset " + std::to_string(model.offset(3, 7, 1))) !=
            std::string::npos);
    }
    // Whole again: the same bytes written back past the cut.
    std::string tail(size - cut, '\0');
    for (uint64_t i = cut; i < size; ++i) tail[i - cut] = char(pattern_byte(i));
    {
      std::fstream out(model.file_path, std::ios::in | std::ios::out | std::ios::binary);
      out.seekp(std::streamoff(cut));
      out.write(tail.data(), std::streamsize(tail.size()));
      REQUIRE(out.good());
    }
    const uint64_t misses_before = pager.stats().misses;
    auto retry = acquire(pager, 3, {7, 0});
    CHECK(model.slot_holds(retry.slots[0], 3, 7));
    CHECK(model.slot_holds(retry.slots[1], 3, 0));
    CHECK(pager.stats().misses == misses_before + 1);  // expert 7 was read again, not trusted
  }
}
