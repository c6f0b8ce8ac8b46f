#include "serve/openai_json.hpp"

namespace moepage::serve {
namespace {
using nlohmann::json;

json usage(const GenerationOutcome& o) {
  return {{"prompt_tokens", o.prompt_tokens},
          {"completion_tokens", o.completion_tokens},
          {"total_tokens", o.prompt_tokens + o.completion_tokens}};
}

json extras(const GenerationOutcome& o) { return {{"profile", o.profile}, {"token_ids", o.token_ids}}; }

bool is_chat(const ResponseMeta& m) { return m.endpoint == Endpoint::chat; }

json envelope(const ResponseMeta& m, const char* object, json choice) {
  return {{"id", m.id},
          {"object", object},
          {"created", m.created},
          {"model", m.model},
          {"choices", json::array({std::move(choice)})}};
}

}  // namespace

json whole_response(const ResponseMeta& meta, const std::string& text, const GenerationOutcome& outcome) {
  json choice{{"index", 0}, {"logprobs", nullptr}, {"finish_reason", outcome.finish_reason}};
  if (is_chat(meta)) choice["message"] = {{"role", "assistant"}, {"content", text}};
  else choice["text"] = text;
  json out = envelope(meta, is_chat(meta) ? "chat.completion" : "text_completion", std::move(choice));
  out["usage"] = usage(outcome);
  out["moepage"] = extras(outcome);
  return out;
}

json text_chunk(const ResponseMeta& meta, const std::string& text, bool first) {
  json choice{{"index", 0}, {"logprobs", nullptr}, {"finish_reason", nullptr}};
  if (is_chat(meta)) {
    choice["delta"] = {{"content", text}};
    if (first) choice["delta"]["role"] = "assistant";
  } else {
    choice["text"] = text;
  }
  return envelope(meta, is_chat(meta) ? "chat.completion.chunk" : "text_completion", std::move(choice));
}

json final_chunk(const ResponseMeta& meta, const GenerationOutcome& outcome) {
  json choice{{"index", 0}, {"logprobs", nullptr}, {"finish_reason", outcome.finish_reason}};
  if (is_chat(meta)) choice["delta"] = json::object();
  else choice["text"] = "";
  json out = envelope(meta, is_chat(meta) ? "chat.completion.chunk" : "text_completion", std::move(choice));
  out["usage"] = usage(outcome);
  out["moepage"] = extras(outcome);
  return out;
}

std::string sse_event(const json& body) {
  // Invalid UTF-8 from a client's own text is replaced, not a reason to drop the stream.
  return "data: " + body.dump(-1, ' ', false, json::error_handler_t::replace) + "\n\n";
}

}  // namespace moepage::serve
