// The built plugins (deepseek4, resident, pread) loaded through the registry from the build's
// plugin folder and stacked as `moepage run` stacks them: arch -> transport -> pager -> bind.
#pragma once
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "host/host_api.hpp"
#include "host/registry.hpp"
#include "moepage/cpp/host_handles.hpp"
#include "support/option_values.hpp"

namespace moepage::test {

struct PluginStack {
  host::HostApi host;
  host::Registry registry{host.get()};
  std::unique_ptr<OptionValues> arch_options, transport_options, pager_options;
  mp::ArchHandle arch;
  mp::TransportHandle transport;
  mp::PagerHandle pager;
  mp_model_info info{};

  // Loads `dir` with arch deepseek4 (2 threads unless `arch_set` says otherwise), pread and
  // `pager_name`, and binds the pager.
  explicit PluginStack(const std::filesystem::path& dir, const std::string& pager_name = "resident",
                       std::vector<std::pair<std::string, std::string>> arch_set = {});
  ~PluginStack();
};

}  // namespace moepage::test
