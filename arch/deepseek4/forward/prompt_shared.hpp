// Where a batch's shared expert runs on the GPU: a prompt batch's as the profile's
// arch.prompt_shared_expert says, a decode step's as arch.decode_shared_expert says. Plain C++: the
// model's options carry both to the GPU tier.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace moepage::ds4 {

// Beside: on a side stream, beside the router and the routed experts. Urgent: the same on a
// stream of the device's greatest priority, so its kernels' blocks start before the routed
// experts' waiting ones. First: on the compute stream, before the router. Auto: First where the
// batch's dense products go to the vendor's library (arch.library_min_tokens), else Beside. A
// decode step's shared expert runs Beside unless arch.decode_shared_expert says Urgent or First
// (Auto is not offered there): each of its kernels fills a fraction of the device, so beside is the
// natural place, but the kernel traces show it starting late beside the routed experts, whose
// blocks already hold the device, and the combine then waiting for it
// (bench/results/2026-12-07-h200.md: 4.3-5.7 us a layer, H200).
//
// Why Auto (bench/results/2026-12-05-prompt-shared.md, H100): on the library the shared expert is
// a chain of thirteen short kernels (dequantize, split x, multiply); queued beside a hash layer's
// routed experts, which the host launches at once, it runs in their gaps and the MoE block took
// 0.7 ms more than its kernels at 1,024 tokens: First gave +8% there. A 128-token batch's shared
// expert is three matrix-core kernels that fill the routed experts' gaps well: First lost 3%.
enum class PromptShared : uint8_t { Auto, Beside, Urgent, First };

constexpr std::string_view prompt_shared_name(PromptShared p) {
  return p == PromptShared::Auto     ? "auto"
         : p == PromptShared::Beside ? "beside"
         : p == PromptShared::Urgent ? "urgent"
                                     : "first";
}

// Where a batch of n_tokens runs its shared expert under `p` (the prompt's choice) and `decode`
// (a one-token step's): never Auto. on_library: whether the batch's dense products go to the
// vendor's library.
constexpr PromptShared prompt_shared_for(PromptShared p, int64_t n_tokens, bool on_library,
                                         PromptShared decode = PromptShared::Beside) {
  if (n_tokens <= 1) return decode == PromptShared::Auto ? PromptShared::Beside : decode;
  if (p != PromptShared::Auto) return p;
  return on_library ? PromptShared::First : PromptShared::Beside;
}

// The profile's spelling; anything else throws std::invalid_argument naming the value.
inline PromptShared prompt_shared_from_name(std::string_view s) {
  for (PromptShared p : {PromptShared::Auto, PromptShared::Beside, PromptShared::Urgent, PromptShared::First})
    if (s == prompt_shared_name(p)) return p;
  throw std::invalid_argument("arch.prompt_shared_expert: '" + std::string(s) +
                              "', expected auto, beside, urgent or first");
}

// arch.decode_shared_expert's spelling (beside, urgent or first); anything else throws
// std::invalid_argument naming the value.
inline PromptShared decode_shared_from_name(std::string_view s) {
  for (PromptShared p : {PromptShared::Beside, PromptShared::Urgent, PromptShared::First})
    if (s == prompt_shared_name(p)) return p;
  throw std::invalid_argument("arch.decode_shared_expert: '" + std::string(s) + "', expected beside, urgent or first");
}

}  // namespace moepage::ds4
