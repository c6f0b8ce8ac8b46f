// The conformance suite checked against test doubles with known faults (each check must catch
// the fault it exists for, and a correct component must pass everything) and run on the real
// pread transport.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

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

using DescriptorOf = const mp_component_descriptor& (*)();

Checklist check_fake_transport(DescriptorOf descriptor) {
  moepage::host::HostApi host;
  Checklist list;
  moepage::conform::run_transport_checks(Component{&descriptor(), nullptr}, host.get(), ConformConfig{}, list);
  return list;
}

moepage::host::LoadResult load_builtin(const std::string& file, const mp_host_api* host) {
  return moepage::host::load_plugin(moepage::test::plugin_dir() / file, host);
}

Checklist check_fake_pager(DescriptorOf descriptor) {
  moepage::host::HostApi host;
  const moepage::host::LoadResult pread = load_builtin("libmoepage-transport-pread.so", host.get());
  REQUIRE(pread.components.size() == 1);
  Checklist list;
  moepage::conform::run_pager_checks(Component{&descriptor(), nullptr},
                                     Component{pread.components[0].descriptor, pread.components[0].library}, host.get(),
                                     ConformConfig{}, list);
  return list;
}

// A test double: the conformance run of its kind and its descriptor.
struct Double {
  Checklist (*run)(DescriptorOf);
  DescriptorOf descriptor;
};
template <Fault F>
constexpr Double kTransport{&check_fake_transport, &conform_test::fake_transport_descriptor<F>};
template <PagerFault F>
constexpr Double kPager{&check_fake_pager, &conform_test::fake_pager_descriptor<F>};

}  // namespace

TEST_CASE("a correct transport passes every conformance check") {
  const Checklist list = check_fake_transport(&conform_test::fake_transport_descriptor<Fault::none>);
  CHECK_MESSAGE(list.failures() == 0, failed(list));
  CHECK(list.results().size() > 15);
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
  const Checklist list = check_fake_transport(&conform_test::fake_transport_descriptor<Fault::not_available>);
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
  const Checklist list = check_fake_pager(&conform_test::fake_pager_descriptor<PagerFault::none>);
  CHECK_MESSAGE(list.failures() == 0, failed(list));
  CHECK(list.results().size() > 10);
}

// Each faulty double and parts of the names of the checks that must fail for it.
TEST_CASE("each fault of a transport or pager fails the checks that exist for it") {
  const struct {
    const char* fault;
    Double faulty;
    std::vector<std::string> caught_by;
  } cases[] = {
      {"a transport returns a wrong byte",
       kTransport<Fault::flips_a_byte>,
       {"random ranges in one batch are byte-exact", "overlapping ranges", "four threads"}},
      {"a transport writes past its destination range",
       kTransport<Fault::writes_past_dst>,
       {"stay inside their destination"}},
      {"a transport reports success for reads past the end of the file",
       kTransport<Fault::ignores_end_of_file>,
       {"reading past the end fails with io naming the file"}},
      {"a transport keeps its stats at zero", kTransport<Fault::forgets_stats>, {"stats count requests and bytes"}},
      // ABI 1.4's rules, each caught by its check.
      {"a transport walks requests with its own sizeof",
       kTransport<Fault::ignores_stride>,
       {"walked with that stride"}},
      {"a transport does not say which request failed",
       kTransport<Fault::names_no_request>,
       {"names the failed request's index and tag"}},
      {"a transport reports a ticket twice", kTransport<Fault::reports_twice>, {"two threads waiting for one ticket"}},
      {"a transport takes struct_size 0 as the full struct",
       kTransport<Fault::zero_means_full>,
       {"refuse struct_size 0"}},
      {"a transport copies to the device from pageable memory",
       kTransport<Fault::pageable_copy>,
       {"copied from pinned memory"}},
      {"a transport returns from wait before its device copies ran",
       kTransport<Fault::unsynchronised_copy>,
       {"copied from pinned memory"}},
      {"a pager counts hits as misses", kPager<PagerFault::counts_hits_as_misses>, {"the second time as hits"}},
      {"a pager accepts expert ids outside the catalog",
       kPager<PagerFault::accepts_any_expert>,
       {"acquiring an expert outside the catalog fails"}},
      {"a pager turns a transport's device failure into io", kPager<PagerFault::reports_io>, {"fails with device too"}},
      {"a pager names a failed read by guesswork, not by the reported request",
       kPager<PagerFault::names_first_part>,
       {"named by the request the transport reports"}},
      {"a pager's stats take struct_size 0 as the full struct",
       kPager<PagerFault::full_size_on_zero>,
       {"keep to the caller's struct_size"}},
      {"a pager offers half of the split acquire", kPager<PagerFault::split_without_await>, {"offered whole"}},
      {"a pager starts a started layer again", kPager<PagerFault::restarts_started_layer>, {"keeps its rules"}},
  };
  for (const auto& c : cases) {
    CAPTURE(c.fault);
    const Checklist list = c.faulty.run(c.faulty.descriptor);
    for (const std::string& check : c.caught_by) CHECK_MESSAGE(has_failure(list, check), check);
  }
}
