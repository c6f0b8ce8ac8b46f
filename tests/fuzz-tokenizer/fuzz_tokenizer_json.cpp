// libFuzzer entry for the tokenizer.json reader: any input either loads or is refused with a
// TokenizerError; a loaded tokenizer then encodes and decodes (part of) the same bytes. Any
// other exception, a crash or a sanitizer report is a bug.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "tokenizer/tokenizer.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  try {
    const auto tokenizer = moepage::tokenizer::Tokenizer::parse(input, "fuzz-input");
    const auto ids = tokenizer.encode(input.substr(0, 512), /*add_special_tokens=*/true);
    (void)tokenizer.decode(ids);
    (void)tokenizer.decode(ids, /*skip_special_tokens=*/true);
    moepage::tokenizer::StreamDecoder stream(tokenizer);
    for (int32_t id : ids) (void)stream.push(id);
    (void)stream.finish();
  } catch (const moepage::tokenizer::TokenizerError&) {
    // Refused with a message: the expected outcome for most inputs.
  }
  return 0;
}
