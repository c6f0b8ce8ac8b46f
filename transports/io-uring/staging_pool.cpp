#include "staging_pool.hpp"

#include <cstdlib>

#include "moepage/cpp/plugin_adapter.hpp"

namespace moepage::uring {

StagingPool::StagingPool(const mp_host_api* host, uint32_t count, uint64_t bytes)
    : dev_(host != nullptr && MP_HAS_FIELD(host, mp_host_api, device) ? host->device : nullptr),
      count_(count),
      bytes_(bytes) {
  const uint64_t total = uint64_t(count) * bytes;
  if (dev_ != nullptr && dev_->alloc_pinned != nullptr && dev_->free_pinned != nullptr) {
    // alloc_pinned promises no alignment beyond the platform's: take a block page larger and align inside.
    if (dev_->alloc_pinned(dev_->ctx, total + kStagingAlignment, &block_) != MP_OK || block_ == nullptr)
      throw mp::Error(MP_ERR_OOM, mp::format("io-uring: cannot allocate {} bytes of pinned staging", total));
    pinned_ = true;
    const auto at = reinterpret_cast<uintptr_t>(block_);
    base_ = static_cast<unsigned char*>(block_) + (kStagingAlignment - at % kStagingAlignment) % kStagingAlignment;
  } else {
    if (::posix_memalign(&block_, kStagingAlignment, total) != 0 || block_ == nullptr)
      throw mp::Error(MP_ERR_OOM, mp::format("io-uring: cannot allocate {} bytes of staging", total));
    base_ = static_cast<unsigned char*>(block_);
  }
  if (dev_ != nullptr && dev_->event_create != nullptr && dev_->event_destroy != nullptr) {
    events_.assign(count, nullptr);
    for (mp_event& e : events_) {
      if (dev_->event_create(dev_->ctx, &e) != MP_OK || e == nullptr) {
        e = nullptr;
        release();
        throw mp::Error(MP_ERR_DEVICE, "io-uring: cannot create the staging buffers' events");
      }
    }
  }
}

StagingPool::~StagingPool() { release(); }

void StagingPool::release() noexcept {
  for (mp_event e : events_)
    if (e != nullptr) dev_->event_destroy(dev_->ctx, e);
  events_.clear();
  if (block_ == nullptr) return;
  if (pinned_) {
    dev_->free_pinned(dev_->ctx, block_);
  } else {
    std::free(block_);
  }
  block_ = nullptr;
}

std::vector<iovec> StagingPool::iovecs() const {
  std::vector<iovec> out(count_);
  for (uint32_t i = 0; i < count_; ++i) out[i] = iovec{data(i), bytes_};
  return out;
}

}  // namespace moepage::uring
