// The pager conformance runner: the vtable and the option table first, then creation over the
// synthetic catalog, then every check of pager_checks.cpp and pager_failure_checks.cpp. Most
// checks share one instance, in order (the statistics check counts what the checks before it
// acquired); the lifetime and failure checks make their own.
#include <memory>

#include "conform/pager_fixture.hpp"

namespace moepage::conform {

void run_pager_checks(const Component& c, const Component& transport, const mp_host_api* host,
                      const ConformConfig& config, Checklist& list) {
  run_option_checks(c, config, list);
  if (!list.run("the descriptor has a pager vtable",
                [&] { expect(c.descriptor->pager != nullptr, "the descriptor has no pager vtable"); }))
    return;
  if (!run_vtable_check(c, list)) return;
  std::unique_ptr<SampleFile> file_a, file_b;
  if (!list.run("two sample files are generated for the synthetic catalog", [&] {
        file_a = std::make_unique<SampleFile>(kPagerFileBytes, config.seed, config.scratch);
        file_b = std::make_unique<SampleFile>(kPagerFileBytes, config.seed + 1, config.scratch);
      }))
    return;
  const SyntheticCatalog catalog(*file_a, *file_b);
  PagerContext ctx{c, transport, host, config, *file_a, *file_b, catalog, nullptr, std::mt19937_64(config.seed)};
  if (!creation_check(list,
                      "creates an instance over the synthetic catalog with transport '" +
                          std::string(transport.descriptor->name) + "'",
                      [&] { ctx.stack = ctx.make_stack(); }))
    return;
  std::vector<PagerCheck> checks = pager_checks();
  for (const PagerCheck& f : pager_failure_checks()) checks.push_back(f);
  for (const PagerCheck& f : pager_split_checks()) checks.push_back(f);
  for (const PagerCheck& f : pager_fixed_slots_checks()) checks.push_back(f);
  for (const PagerCheck& f : pager_residency_checks()) checks.push_back(f);
  for (const PagerCheck& check : checks) {
    if (c.abi_minor < check.since_minor) continue;  // rules newer than the plugin's minor
    list.run(check.name, [&] { check.run(ctx); });
  }
}

}  // namespace moepage::conform
