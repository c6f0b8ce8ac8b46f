// The body of POST /v1/completions and /v1/chat/completions, parsed and checked. Every field
// that is present must have the type and range the OpenAI API gives it; anything else is a 400
// naming the field. Fields this server does not implement are refused, not ignored, when they
// would change the answer (n > 1, echo, logprobs, best_of, suffix, tools, logit_bias).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "serve/chat_format.hpp"

namespace moepage::serve {

enum class Endpoint { completions, chat };

struct CompletionRequest {
  Endpoint endpoint = Endpoint::completions;
  std::optional<std::string> model;
  // /v1/completions: the prompt as text, or as token ids.
  std::optional<std::string> prompt_text;
  std::optional<std::vector<int32_t>> prompt_ids;
  // /v1/chat/completions: the conversation, its last message a user turn.
  std::vector<ChatMessage> messages;
  // Absent fields take the serving profile's generate: settings.
  std::optional<uint32_t> max_tokens;
  std::optional<double> temperature;
  std::optional<double> top_p;
  std::optional<uint32_t> top_k;
  std::optional<uint64_t> seed;
  std::vector<std::string> stop;
  bool stream = false;
};

// Throws ApiError (400) for malformed JSON, a wrong type, a value out of range or an unsupported
// field. `max_tokens_limit` is the largest max_tokens the server accepts.
CompletionRequest parse_completion_request(std::string_view body, Endpoint endpoint, uint32_t max_tokens_limit);

}  // namespace moepage::serve
