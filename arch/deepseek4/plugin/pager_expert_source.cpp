#include "pager_expert_source.hpp"

#include <stdexcept>
#include <string>

namespace moepage::ds4 {

void PagerExpertSource::acquire(uint32_t layer, const int32_t* experts, uint32_t n, const std::byte** slots) {
  const mp_event ready = pager_.acquire(layer, experts, n, slots);
  if (ready == nullptr) return;
  const mp_device_service* dev = pager_.host() ? pager_.host()->device : nullptr;
  if (dev == nullptr || dev->event_synchronize == nullptr)
    throw std::runtime_error(
        "arch 'deepseek4': the pager returned a ready event but the host has no event_synchronize");
  if (const mp_status s = dev->event_synchronize(dev->ctx, ready); s != MP_OK)
    throw std::runtime_error(std::string("arch 'deepseek4': waiting for layer ") + std::to_string(layer) +
                             " experts failed: " + mp_status_name(s));
}

}  // namespace moepage::ds4
