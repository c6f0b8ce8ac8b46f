#include "plugin_stack.hpp"
#include "support/test_paths.hpp"

namespace moepage::test {

PluginStack::PluginStack(const std::filesystem::path& dir, const std::string& pager_name,
                         std::vector<std::pair<std::string, std::string>> arch_set) {
  registry.scan({moepage::test::plugin_dir()});
  const auto& a = registry.find(MP_KIND_ARCH, "deepseek4");
  const auto& t = registry.find(MP_KIND_TRANSPORT, "pread");
  const auto& p = registry.find(MP_KIND_PAGER, pager_name);
  arch_set.insert(arch_set.begin(), {"threads", "2"});
  arch_options = std::make_unique<OptionValues>(*a.descriptor, arch_set);
  transport_options = std::make_unique<OptionValues>(*t.descriptor, std::vector<std::pair<std::string, std::string>>{});
  pager_options = std::make_unique<OptionValues>(*p.descriptor, std::vector<std::pair<std::string, std::string>>{});

  const std::string d = dir.string();
  mp_arch_create_args arch_args{sizeof(mp_arch_create_args), host.get(), &arch_options->options, d.c_str()};
  arch = mp::ArchHandle::create(*a.descriptor, a.library, arch_args);
  info = arch.describe();
  transport = mp::TransportHandle::create(*t.descriptor, t.library, host.get(), &transport_options->options);
  mp_pager_create_args pager_args{sizeof(mp_pager_create_args), host.get(),      &pager_options->options,
                                  arch.expert_catalog(),        transport.ref(), info.dense_bytes};
  pager = mp::PagerHandle::create(*p.descriptor, p.library, pager_args);
  arch.bind_pager(pager.ref());
}

// Shut down in the order the host does: arch, then pager, then transport.
PluginStack::~PluginStack() {
  arch.reset();
  pager.reset();
  transport.reset();
}

}  // namespace moepage::test
