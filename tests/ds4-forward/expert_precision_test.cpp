// The profile spelling of the routed experts' matrix-core operands, and the bound that decides
// where one fp16 part may carry their x (forward/expert_precision.hpp); where a prompt's shared
// expert runs on the GPU (forward/prompt_shared.hpp).
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "deepseek4/forward/expert_precision.hpp"
#include "deepseek4/forward/prompt_shared.hpp"

using namespace moepage::ds4;

TEST_CASE("expert precision names round-trip and anything else is refused") {
  for (ExpertPrecision p : {ExpertPrecision::Fp16, ExpertPrecision::SplitBf16, ExpertPrecision::Bf16})
    CHECK(parse_expert_precision(expert_precision_name(p)) == p);
  CHECK(!parse_expert_precision("FP16").has_value());
  CHECK(!parse_expert_precision("").has_value());
}

TEST_CASE("fp16 carries the experts' x only where the norm and the SwiGLU clamp bound it below 65504") {
  std::vector<float> norm(4096, 1.0f);  // sqrt(4096) * 1 = 64
  CHECK(fp16_holds_expert_inputs(norm.data(), norm.size(), 10.0));
  CHECK(!fp16_holds_expert_inputs(norm.data(), norm.size(), 0.0));    // no clamp: the SwiGLU is unbounded
  CHECK(!fp16_holds_expert_inputs(norm.data(), norm.size(), 256.0));  // 256^2 = 65536
  CHECK(fp16_holds_expert_inputs(norm.data(), norm.size(), 255.0));
  norm[17] = -1023.0f;  // 64 * 1023 = 65472
  CHECK(fp16_holds_expert_inputs(norm.data(), norm.size(), 10.0));
  norm[17] = -1024.0f;  // 65536
  CHECK(!fp16_holds_expert_inputs(norm.data(), norm.size(), 10.0));
  norm[17] = std::numeric_limits<float>::quiet_NaN();
  CHECK(!fp16_holds_expert_inputs(norm.data(), norm.size(), 10.0));
}

TEST_CASE("where a prompt's shared expert runs: the names round-trip and anything else names the key") {
  for (PromptShared p : {PromptShared::Auto, PromptShared::Beside, PromptShared::Urgent, PromptShared::First})
    CHECK(prompt_shared_from_name(prompt_shared_name(p)) == p);
  CHECK_THROWS_WITH_AS(prompt_shared_from_name("later"),
                       "arch.prompt_shared_expert: 'later', expected auto, beside, urgent or first",
                       std::invalid_argument);
}

TEST_CASE("auto runs a prompt's shared expert first where its products go to the library, else beside") {
  CHECK(prompt_shared_for(PromptShared::Auto, 1024, true) == PromptShared::First);
  CHECK(prompt_shared_for(PromptShared::Auto, 128, false) == PromptShared::Beside);
  // A decode step's runs where the decode choice says (beside by default), whatever the prompt's says.
  for (PromptShared p : {PromptShared::Auto, PromptShared::Beside, PromptShared::Urgent, PromptShared::First}) {
    CHECK(prompt_shared_for(p, 1, true) == PromptShared::Beside);
    CHECK(prompt_shared_for(p, 1, false, PromptShared::First) == PromptShared::First);
    CHECK(prompt_shared_for(p, 1, true, PromptShared::Urgent) == PromptShared::Urgent);
    CHECK(prompt_shared_for(p, 1, true, PromptShared::Auto) == PromptShared::Beside);
  }
  for (PromptShared p : {PromptShared::Beside, PromptShared::Urgent, PromptShared::First}) {
    CHECK(prompt_shared_for(p, 1024, true) == p);
    CHECK(prompt_shared_for(p, 128, false) == p);
    // ... and a prompt batch's never follows the decode choice.
    CHECK(prompt_shared_for(p, 128, false, PromptShared::First) == p);
  }
  CHECK(prompt_shared_for(PromptShared::Auto, 128, false, PromptShared::First) == PromptShared::Beside);
}

TEST_CASE("where a decode step's shared expert runs: beside, urgent or first, and anything else names the key") {
  for (PromptShared p : {PromptShared::Beside, PromptShared::Urgent, PromptShared::First})
    CHECK(decode_shared_from_name(prompt_shared_name(p)) == p);
  CHECK_THROWS_WITH_AS(decode_shared_from_name("auto"),
                       "arch.decode_shared_expert: 'auto', expected beside, urgent or first", std::invalid_argument);
  CHECK_THROWS_WITH_AS(decode_shared_from_name(""), "arch.decode_shared_expert: '', expected beside, urgent or first",
                       std::invalid_argument);
}
