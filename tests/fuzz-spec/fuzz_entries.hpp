// Fuzz bodies for the two remaining file parsers of the CLI: ablation specs (YAML) and a model's
// generation_config.json. The libFuzzer mains (MOEPAGE_FUZZ=ON, clang) and the doctest replay of
// the committed seeds (every build) call the same bodies. A body returns normally when the input
// parses or is refused with the parser's own error type; anything else escaping is a finding.
#pragma once
#include <cstddef>
#include <cstdint>

namespace moepage::fuzz {

void ablation_spec_input(const uint8_t* data, size_t size);
void generation_config_input(const uint8_t* data, size_t size);

}  // namespace moepage::fuzz
