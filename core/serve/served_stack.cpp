#include "serve/served_stack.hpp"

#include <string>

#include "host/log.hpp"

namespace moepage::serve {

ServedStack::ServedStack(cli::ResolvedStack& resolved, const profile::Profile& prof, const mp_host_api* host) {
  if (prof.parallel.ranks <= 1) {
    one_.emplace(cli::create_stack(resolved, host));
    arch_forward_ = std::make_unique<cli::ArchForward>(one_->stack.arch);
    forward_ = arch_forward_.get();
    info_ = one_->info;
    catalog_ = one_->catalog;
    pagers_.push_back(&one_->stack.pager);
    return;
  }
  const std::string key = cli::ranks_key(prof.parallel);
  devices_ = std::make_unique<cli::RankDevices>(prof, host);
  ranks_ = std::make_unique<cli::RankStacks>(resolved, *devices_, prof.parallel, key);
  host::logger("serve")->info("{} expert-parallel ranks; {}", ranks_->ranks(), devices_->describe());
  info_ = ranks_->info();
  catalog_ = &ranks_->catalog();
  for (uint32_t r = 0; r < ranks_->ranks(); ++r) pagers_.push_back(&ranks_->pager(r));
  forward_ = ranks_.get();
}

ServedStack::~ServedStack() {
  if (ranks_) ranks_->shutdown();  // the ranks' threads stop before their stacks go
}

}  // namespace moepage::serve
