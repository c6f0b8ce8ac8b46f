// Where a prompt batch's shared expert runs on the GPU, the profile's arch.prompt_shared_expert.
// Plain C++: the model's options carry it to the GPU tier.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace moepage::ds4 {

// Beside: on a side stream, beside the router and the routed experts. Urgent: the same on a
// stream of the device's greatest priority, so its kernels' blocks start before the routed
// experts' waiting ones. First: on the compute stream, before the router. A decode step's shared
// expert always runs beside: there each kernel fills a fraction of the device.
enum class PromptShared : uint8_t { Beside, Urgent, First };

constexpr std::string_view prompt_shared_name(PromptShared p) {
  return p == PromptShared::Beside ? "beside" : p == PromptShared::Urgent ? "urgent" : "first";
}

// The profile's spelling; anything else throws std::invalid_argument naming the value.
inline PromptShared prompt_shared_from_name(std::string_view s) {
  for (PromptShared p : {PromptShared::Beside, PromptShared::Urgent, PromptShared::First})
    if (s == prompt_shared_name(p)) return p;
  throw std::invalid_argument("arch.prompt_shared_expert: '" + std::string(s) + "', expected beside, urgent or first");
}

}  // namespace moepage::ds4
