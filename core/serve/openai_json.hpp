// The response bodies of /v1/completions and /v1/chat/completions as the OpenAI API shapes them:
// whole (text_completion, chat.completion) and as stream chunks (text_completion,
// chat.completion.chunk). Every final body and final chunk carries `usage`; a `moepage` object
// adds the token ids and the profile that served the request (clients ignore unknown fields).
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "serve/completion_request.hpp"
#include "serve/generation_channel.hpp"

namespace moepage::serve {

// What every body and chunk of one response repeats.
struct ResponseMeta {
  Endpoint endpoint = Endpoint::completions;
  std::string id;  // cmpl-N or chatcmpl-N
  int64_t created = 0;
  std::string model;
};

nlohmann::json whole_response(const ResponseMeta& meta, const std::string& text, const GenerationOutcome& outcome);
// A chunk with `text`; the chat endpoint's first chunk also says the role is assistant.
nlohmann::json text_chunk(const ResponseMeta& meta, const std::string& text, bool first);
// The last chunk before [DONE]: no text, the finish reason and usage.
nlohmann::json final_chunk(const ResponseMeta& meta, const GenerationOutcome& outcome);
// One server-sent event carrying `body` as its data.
std::string sse_event(const nlohmann::json& body);
inline constexpr const char* kSseDone = "data: [DONE]\n\n";

}  // namespace moepage::serve
