// The conformance suite checked against test doubles with known faults (each check must catch
// the fault it exists for, and a correct component must pass everything) and run on the real
// pread transport.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include "conform/checklist.hpp"
#include "conform/conformance.hpp"
#include "fake_pager.hpp"
#include "fake_transport.hpp"
#include "host/host_api.hpp"
#include "host/plugin_loader.hpp"
#include "support/test_paths.hpp"

namespace {

using conform_test::Fault;
using conform_test::PagerFault;
using moepage::conform::Checklist;
using moepage::conform::Component;
using moepage::conform::ConformConfig;

// Names of the checks that failed, one per line, for readable doctest output.
std::string failed(const Checklist& list) {
  std::string out;
  for (const auto& r : list.results()) {
    if (!r.passed && !r.skipped) out += r.name + ": " + r.detail + "\n";
  }
  return out;
}

bool has_failure(const Checklist& list, const std::string& name_part) {
  return std::any_of(list.results().begin(), list.results().end(), [&](const auto& r) {
    return !r.passed && !r.skipped && r.name.find(name_part) != std::string::npos;
  });
}

template <Fault F>
Checklist check_fake_transport() {
  moepage::host::HostApi host;
  Checklist list;
  moepage::conform::run_transport_checks(Component{&conform_test::fake_transport_descriptor<F>(), nullptr}, host.get(),
                                         ConformConfig{}, list);
  return list;
}

moepage::host::LoadResult load_builtin(const std::string& file, const mp_host_api* host) {
  return moepage::host::load_plugin(moepage::test::plugin_dir() / file, host);
}

template <PagerFault F>
Checklist check_fake_pager(const mp_host_api* host) {
  const moepage::host::LoadResult pread = load_builtin("libmoepage-transport-pread.so", host);
  REQUIRE(pread.components.size() == 1);
  Checklist list;
  moepage::conform::run_pager_checks(Component{&conform_test::fake_pager_descriptor<F>(), nullptr},
                                     Component{pread.components[0].descriptor, pread.components[0].library}, host,
                                     ConformConfig{}, list);
  return list;
}

}  // namespace

TEST_CASE("a correct transport passes every conformance check") {
  const Checklist list = check_fake_transport<Fault::none>();
  CHECK_MESSAGE(list.failures() == 0, failed(list));
  CHECK(list.results().size() > 15);
}

TEST_CASE("a transport that returns a wrong byte fails the byte-exactness checks") {
  const Checklist list = check_fake_transport<Fault::flips_a_byte>();
  CHECK(has_failure(list, "random ranges in one batch are byte-exact"));
  CHECK(has_failure(list, "overlapping ranges"));
  CHECK(has_failure(list, "four threads"));
}

TEST_CASE("a transport that writes past its destination range fails the guard-byte check") {
  const Checklist list = check_fake_transport<Fault::writes_past_dst>();
  CHECK(has_failure(list, "stay inside their destination"));
}

TEST_CASE("a transport that reports success for reads past the end of the file fails that check") {
  const Checklist list = check_fake_transport<Fault::ignores_end_of_file>();
  CHECK(has_failure(list, "reading past the end fails with io naming the file"));
}

TEST_CASE("a transport whose stats stay at zero fails the stats check") {
  const Checklist list = check_fake_transport<Fault::forgets_stats>();
  CHECK(has_failure(list, "stats count requests and bytes"));
}

// ABI 1.4's rules, each caught by its check.
TEST_CASE("a transport that walks requests with its own sizeof fails the stride check") {
  const Checklist list = check_fake_transport<Fault::ignores_stride>();
  CHECK(has_failure(list, "walked with that stride"));
}

TEST_CASE("a transport that does not say which request failed fails that check") {
  const Checklist list = check_fake_transport<Fault::names_no_request>();
  CHECK(has_failure(list, "names the failed request's index and tag"));
}

TEST_CASE("a transport that reports a ticket twice fails the two-waiters check") {
  const Checklist list = check_fake_transport<Fault::reports_twice>();
  CHECK(has_failure(list, "two threads waiting for one ticket"));
}

TEST_CASE("a transport that takes struct_size 0 as the full struct fails the stats check") {
  const Checklist list = check_fake_transport<Fault::zero_means_full>();
  CHECK(has_failure(list, "refuse struct_size 0"));
}

TEST_CASE("a transport that copies to the device from pageable memory fails the device check") {
  const Checklist list = check_fake_transport<Fault::pageable_copy>();
  CHECK(has_failure(list, "copied from pinned memory"));
}

TEST_CASE("a transport whose wait returns before its device copies ran fails the device check") {
  const Checklist list = check_fake_transport<Fault::unsynchronised_copy>();
  CHECK(has_failure(list, "copied from pinned memory"));
}

TEST_CASE("a transport declared at ABI 1.2 is not held to rules 1.4 wrote down") {
  moepage::host::HostApi host;
  Checklist list;
  moepage::conform::run_transport_checks(
      Component{&conform_test::fake_transport_descriptor<Fault::zero_means_full>(), nullptr, 2}, host.get(),
      ConformConfig{}, list);
  CHECK_MESSAGE(list.failures() == 0, failed(list));
  CHECK_FALSE(std::any_of(list.results().begin(), list.results().end(),
                          [](const auto& r) { return r.name.find("two threads waiting") != std::string::npos; }));
}

TEST_CASE("a component that says it is not available yet is skipped, not failed") {
  const Checklist list = check_fake_transport<Fault::not_available>();
  CHECK(list.failures() == 0);
  CHECK(list.skipped() == 1);
}

TEST_CASE("an option table with a default that does not parse fails the table check") {
  static constexpr mp_option_def kBad[] = {mp::option(MP_OPT_INT, "threads", "four", "reader threads")};
  mp_component_descriptor d = conform_test::fake_transport_descriptor<Fault::none>();
  d.options = kBad;
  d.n_options = 1;
  Checklist list;
  moepage::conform::run_option_checks(Component{&d, nullptr}, ConformConfig{}, list);
  CHECK(has_failure(list, "the option table is well formed"));
}

TEST_CASE("an option given on the command line that the table lacks is refused naming the key") {
  Checklist list;
  ConformConfig config;
  config.options = {{"thread", "2"}};
  moepage::conform::run_option_checks(Component{&conform_test::fake_transport_descriptor<Fault::none>(), nullptr},
                                      config, list);
  REQUIRE(has_failure(list, "the host resolves the options"));
}

TEST_CASE("the pread transport passes every conformance check") {
  moepage::host::HostApi host;
  const moepage::host::LoadResult pread = load_builtin("libmoepage-transport-pread.so", host.get());
  REQUIRE(pread.components.size() == 1);
  Checklist list;
  ConformConfig config;
  config.options = {{"chunk", "64KiB"}, {"threads", "3"}};  // small chunks: many chunks per request
  moepage::conform::run_transport_checks(Component{pread.components[0].descriptor, pread.components[0].library},
                                         host.get(), config, list);
  CHECK_MESSAGE(list.failures() == 0, failed(list));
  CHECK(list.skipped() == 0);
}

TEST_CASE("a correct pager passes every pager conformance check") {
  moepage::host::HostApi host;
  const Checklist list = check_fake_pager<PagerFault::none>(host.get());
  CHECK_MESSAGE(list.failures() == 0, failed(list));
  CHECK(list.results().size() > 10);
}

TEST_CASE("a pager that counts hits as misses fails the repeated-acquire check") {
  moepage::host::HostApi host;
  const Checklist list = check_fake_pager<PagerFault::counts_hits_as_misses>(host.get());
  CHECK(has_failure(list, "the second time as hits"));
}

TEST_CASE("a pager that accepts expert ids outside the catalog fails the range check") {
  moepage::host::HostApi host;
  const Checklist list = check_fake_pager<PagerFault::accepts_any_expert>(host.get());
  CHECK(has_failure(list, "acquiring an expert outside the catalog fails"));
}

TEST_CASE("a pager that turns a transport's device failure into io fails the status check") {
  moepage::host::HostApi host;
  const Checklist list = check_fake_pager<PagerFault::reports_io>(host.get());
  CHECK(has_failure(list, "fails with device too"));
}

TEST_CASE("a pager that names a failed read by guesswork, not by the reported request, fails that check") {
  moepage::host::HostApi host;
  const Checklist list = check_fake_pager<PagerFault::names_first_part>(host.get());
  CHECK(has_failure(list, "named by the request the transport reports"));
}

TEST_CASE("a pager whose stats take struct_size 0 as the full struct fails the output-struct check") {
  moepage::host::HostApi host;
  const Checklist list = check_fake_pager<PagerFault::full_size_on_zero>(host.get());
  CHECK(has_failure(list, "keep to the caller's struct_size"));
}
