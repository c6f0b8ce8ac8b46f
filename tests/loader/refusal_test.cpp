// Every way a plugin library can be refused: each is logged with the path and both ABI versions,
// recorded for `moepage plugins`, and leaves the host running.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "host/host_api.hpp"
#include "host/log.hpp"
#include "host/plugin_loader.hpp"
#include "support.hpp"
#include "support/abi_text.hpp"

using loader_test::fake_lib;
using moepage::host::HostApi;
using moepage::host::load_plugin;
using moepage::host::LogCapture;
using moepage::test::abi_text;

namespace {

// Loads one library and returns the single refusal it must produce, checking the warn log line.
moepage::host::Refusal refuse_one(const std::filesystem::path& lib, bool quiet = false) {
  HostApi host;
  LogCapture logs;
  const moepage::host::LoadResult r = load_plugin(lib, host.get());
  INFO(logs.dump());
  REQUIRE(r.refusals.size() == 1);
  const std::string line = logs.find({lib.string(), "host ABI " + abi_text()});
  CHECK(line.rfind(quiet ? "debug loader: " : "warning loader: ", 0) == 0);
  CHECK(line.find(r.refusals[0].message) != std::string::npos);
  CHECK(r.refusals[0].quiet == quiet);
  return r.refusals[0];
}

// The message refusing `lib` for `reason` before its manifest could be read.
std::string refused_before_manifest(const std::filesystem::path& lib, const std::string& reason) {
  return "refused plugin " + lib.string() + ": " + reason + " (host ABI " + abi_text() + ", plugin ABI unknown)";
}

}  // namespace

TEST_CASE("a plugin built for another ABI major is refused, naming the file and both versions") {
  const auto lib = fake_lib("wrong-major", "fake-wrong-major");
  const auto refusal = refuse_one(lib);
  CHECK(refusal.message == "refused plugin " + lib.string() + ": ABI major version mismatch (host ABI " + abi_text() +
                               ", plugin ABI " + abi_text(MP_ABI_MAJOR + 1) + ")");
}

TEST_CASE("a plugin built for a newer ABI minor is refused") {
  const auto lib = fake_lib("newer-minor", "fake-newer-minor");
  const auto refusal = refuse_one(lib);
  CHECK(refusal.message == "refused plugin " + lib.string() +
                               ": plugin needs a newer host (ABI minor version is newer) (host ABI " + abi_text() +
                               ", plugin ABI " + abi_text(MP_ABI_MAJOR, MP_ABI_MINOR + 1) + ")");
}

TEST_CASE("a plugin built for an older ABI minor loads") {
  // The host claims minor 1; the fake was built at minor 0, so it is older and must be accepted.
  HostApi host;
  mp_host_api newer = *host.get();
  newer.abi_minor = MP_ABI_MINOR + 1;
  LogCapture logs;
  const auto r = load_plugin(fake_lib("good", "fake-good"), &newer);
  INFO(logs.dump());
  CHECK(r.refusals.empty());
  REQUIRE(r.components.size() == 1);
  CHECK(r.components[0].name() == "fake-good");
  CHECK(r.components[0].abi_minor == MP_ABI_MINOR);
}

TEST_CASE("a stripped plugin library still loads: its entry symbol is in the dynamic table") {
  HostApi host;
  const auto r = load_plugin(loader_test::fake_dir("stripped") / "libfake-stripped.so", host.get());
  CHECK(r.refusals.empty());
  REQUIRE(r.components.size() == 1);
  CHECK(r.components[0].name() == "fake-good");
}

TEST_CASE("a truncated library is refused with what is missing, not loaded") {
  const auto good = fake_lib("good", "fake-good");
  const auto cut = std::filesystem::temp_directory_path() / "moepage-loader-test-truncated.so";
  {
    std::ifstream in(good, std::ios::binary);
    std::vector<char> head(512);
    in.read(head.data(), static_cast<std::streamsize>(head.size()));
    std::ofstream(cut, std::ios::binary).write(head.data(), static_cast<std::streamsize>(head.size()));
  }
  const auto refusal = refuse_one(cut);
  CHECK(refusal.message == refused_before_manifest(cut, "the section header table extends past the end of the file"));
}

TEST_CASE("a file without the entry symbol, not a shared library or missing is refused before loading, not thrown") {
  const std::pair<std::filesystem::path, std::string> cases[] = {
      {fake_lib("missing-entry", "fake-missing-entry"), "missing entry symbol 'moepage_plugin_query'"},
      {loader_test::fake_dir("not-elf") / "libnot-elf.so", "not an ELF shared library (no ELF magic)"},
      {loader_test::fake_dir("no-such-case") / "libnothing.so", "not a regular file (missing, or a directory)"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.first);
    CHECK(refuse_one(c.first).message == refused_before_manifest(c.first, c.second));
  }
}

TEST_CASE("a component with a null required callback is refused, naming the callback") {
  const auto lib = fake_lib("null-callback", "fake-null-callback");
  const auto refusal = refuse_one(lib);
  CHECK(refusal.component == "transport 'fake-null-callback'");
  CHECK(refusal.message == "refused plugin " + lib.string() +
                               " component transport 'fake-null-callback': null required callback: wait "
                               "(host ABI " +
                               abi_text() + ", plugin ABI " + abi_text() + ")");
}

TEST_CASE("a vtable whose struct_size is too small for the minor the plugin declares is refused") {
  const auto refusal = refuse_one(fake_lib("small-struct", "fake-small-struct"));
  CHECK(refusal.message.find("vtable struct_size 48 is smaller than the 96 bytes ABI " + abi_text() + " requires") !=
        std::string::npos);
}

TEST_CASE("a query that returns an error refuses the library with the status") {
  const auto refusal = refuse_one(fake_lib("query-fails", "fake-query-fails"));
  CHECK(refusal.message.find(": moepage_plugin_query returned unsupported (host ABI " + abi_text()) !=
        std::string::npos);
}

TEST_CASE("a query that throws refuses the library instead of crashing the host") {
  const auto refusal = refuse_one(fake_lib("query-throws", "fake-query-throws"));
  CHECK(refusal.message.find("moepage_plugin_query threw: query blew up") != std::string::npos);
}

TEST_CASE("a component whose score is 0 is skipped quietly at debug level, its sibling kept") {
  HostApi host;
  LogCapture logs;
  const auto lib = fake_lib("score-zero", "fake-score-zero");
  const auto r = load_plugin(lib, host.get());
  INFO(logs.dump());
  REQUIRE(r.refusals.size() == 1);
  CHECK(r.refusals[0].quiet);
  CHECK(r.refusals[0].message == "refused plugin " + lib.string() +
                                     " component transport 'fake-unusable': score() is 0: unusable on this host "
                                     "(host ABI " +
                                     abi_text() + ", plugin ABI " + abi_text() + ")");
  CHECK(logs.find({"debug loader: ", "fake-unusable"}) != "");
  CHECK(logs.find({"warning", "fake-unusable"}) == "");
  REQUIRE(r.components.size() == 1);
  CHECK(r.components[0].name() == "fake-usable");
}

TEST_CASE("a library with an unresolved symbol fails at load time, not when the symbol is first used") {
  // RTLD_NOW: with lazy binding this library would load and fail only when it calls the symbol.
  const auto lib = fake_lib("unresolved", "fake-unresolved");
  const auto refusal = refuse_one(lib);
  CHECK(refusal.message.find(": load failed: ") != std::string::npos);
  CHECK(refusal.message.find("moepage_fake_symbol_nobody_defines") != std::string::npos);
}
