// The instances of one run, torn down in the order DESIGN.md fixes: arch, then pager, then
// transport, then (through the keep-alives the handles drop last) the libraries.
//
// Why the order holds: the architecture calls into the pager and the pager into the transport,
// so each must go before what it uses. shutdown() resets them explicitly in that order; the
// member declaration order gives the same order again if shutdown() was never called (members
// die in reverse declaration order). Each handle destroys its instance before releasing its
// library keep-alive, so a library outlives everything created from it even if the Registry
// that loaded it is destroyed first.
#pragma once

#include "moepage/cpp/host_handles.hpp"

namespace moepage::host {

struct PluginStack {
  mp::TransportHandle transport;  // declared first: destroyed last
  mp::PagerHandle pager;
  mp::ArchHandle arch;  // declared last: destroyed first

  PluginStack() = default;
  PluginStack(PluginStack&&) = default;
  PluginStack& operator=(PluginStack&& other) noexcept {
    shutdown();
    transport = std::move(other.transport);
    pager = std::move(other.pager);
    arch = std::move(other.arch);
    return *this;
  }
  ~PluginStack() { shutdown(); }

  void shutdown() noexcept {
    arch.reset();
    pager.reset();
    transport.reset();
  }
};

}  // namespace moepage::host
