// The transport conformance runner: the vtable and the option table first (nothing else can be
// checked without them), then creation, then every check of transport_*_checks.cpp on a generated
// sample file, each on fresh instances.
#include <memory>

#include "conform/transport_fixture.hpp"

namespace moepage::conform {
namespace {

std::vector<TransportCheck> all_checks() {
  std::vector<TransportCheck> out;
  for (auto group : {&transport_read_checks, &transport_rule_checks, &transport_ticket_checks, &transport_device_checks,
                     &transport_lifetime_checks}) {
    for (const TransportCheck& c : group()) out.push_back(c);
  }
  return out;
}

}  // namespace

void run_transport_checks(const Component& c, const mp_host_api* host, const ConformConfig& config, Checklist& list) {
  run_option_checks(c, config, list);
  if (!list.run("the descriptor has a transport vtable",
                [&] { expect(c.descriptor->transport != nullptr, "the descriptor has no transport vtable"); }))
    return;
  if (!run_vtable_check(c, list)) return;
  const auto create = [&] {
    profile::ResolvedOptions options = resolve_options(*c.descriptor, config);
    mp::TransportHandle::create(*c.descriptor, c.library, host, options.c_options());
  };
  // Components that declare themselves unfinished fail here with their own message.
  if (!creation_check(list, "creates an instance with its options", create)) return;

  std::unique_ptr<SampleFile> sample;
  if (!list.run("a sample file is generated for the checks",
                [&] { sample = std::make_unique<SampleFile>(kTransportFileBytes, config.seed, config.scratch); }))
    return;
  TransportContext ctx{c, host, config, *sample, sample->path().string(), std::mt19937_64(config.seed)};
  for (const TransportCheck& check : all_checks()) {
    if (c.abi_minor < check.since_minor || (check.applies != nullptr && !check.applies(ctx))) continue;
    list.run(check.name, [&] { check.run(ctx); });
  }
}

}  // namespace moepage::conform
