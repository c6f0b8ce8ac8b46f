#include "serve/completion_request.hpp"

#include <limits>

#include <nlohmann/json.hpp>

#include "serve/api_error.hpp"

namespace moepage::serve {
namespace {
using nlohmann::json;

constexpr size_t kMaxStops = 16;

const json* field(const json& body, const char* name) {
  const auto it = body.find(name);
  return it == body.end() || it->is_null() ? nullptr : &*it;
}

double number_in(const json& value, const char* name, double low, double high) {
  if (!value.is_number()) throw bad_field(name, "must be a number");
  const double v = value.get<double>();
  if (!(v >= low && v <= high))
    throw bad_field(name,
                    "must be between " + json(low).dump() + " and " + json(high).dump() + ", got " + value.dump());
  return v;
}

int64_t integer(const json& value, const char* name) {
  if (!value.is_number_integer()) throw bad_field(name, "must be an integer, got " + value.dump());
  if (value.is_number_unsigned() && value.get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max()))
    throw bad_field(name, "is too large: " + value.dump());
  return value.get<int64_t>();
}

// A message's content: a string, or an array of {"type": "text", "text": ...} parts.
std::string message_content(const json& content, size_t index) {
  const std::string name = "messages[" + std::to_string(index) + "].content";
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) throw bad_field(name, "must be a string or an array of text parts");
  std::string out;
  for (const json& part : content) {
    if (!part.is_object() || part.value("type", "") != "text" || !part.contains("text") || !part["text"].is_string())
      throw bad_field(name, "parts must be {\"type\": \"text\", \"text\": \"...\"} (only text is supported)");
    out += part["text"].get<std::string>();
  }
  return out;
}

std::vector<ChatMessage> parse_messages(const json* messages) {
  if (messages == nullptr) throw bad_field("messages", "is required");
  if (!messages->is_array() || messages->empty()) throw bad_field("messages", "must be a non-empty array");
  std::vector<ChatMessage> out;
  for (size_t i = 0; i < messages->size(); ++i) {
    const json& m = (*messages)[i];
    const std::string at = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) throw bad_field(at, "must be an object with role and content");
    if (!m.contains("role") || !m["role"].is_string()) throw bad_field(at + ".role", "must be a string");
    const std::string role = m["role"].get<std::string>();
    if (role != "system" && role != "user" && role != "assistant" && role != "developer")
      throw bad_field(at + ".role", "must be system, user, assistant or developer (got '" + role +
                                        "'; tool messages are not supported)");
    if (m.contains("tool_calls") && !m["tool_calls"].is_null())
      throw bad_field(at + ".tool_calls", "is not supported by this server");
    if (!m.contains("content") || m["content"].is_null()) throw bad_field(at + ".content", "is required");
    out.push_back({role, message_content(m["content"], i)});
  }
  if (out.back().role != "user" && out.back().role != "developer")
    throw bad_field("messages", "must end with a user message (the reply follows it)");
  return out;
}

void parse_prompt(const json* prompt, CompletionRequest& out) {
  if (prompt == nullptr) throw bad_field("prompt", "is required");
  if (prompt->is_string()) {
    out.prompt_text = prompt->get<std::string>();
    return;
  }
  if (prompt->is_array() && prompt->size() == 1 && (*prompt)[0].is_string()) {
    out.prompt_text = (*prompt)[0].get<std::string>();
    return;
  }
  if (prompt->is_array() && !prompt->empty()) {
    std::vector<int32_t> ids;
    for (const json& id : *prompt) {
      if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > std::numeric_limits<int32_t>::max())
        throw bad_field("prompt", "must be a string, an array of one string, or an array of token ids");
      ids.push_back(int32_t(id.get<int64_t>()));
    }
    out.prompt_ids = std::move(ids);
    return;
  }
  throw bad_field("prompt", "must be a string, an array of one string, or a non-empty array of token ids");
}

std::vector<std::string> parse_stop(const json& stop) {
  if (stop.is_string()) return {stop.get<std::string>()};
  if (!stop.is_array() || stop.size() > kMaxStops)
    throw bad_field("stop", "must be a string or an array of at most " + std::to_string(kMaxStops) + " strings");
  std::vector<std::string> out;
  for (const json& s : stop) {
    if (!s.is_string()) throw bad_field("stop", "must hold strings only, got " + s.dump());
    out.push_back(s.get<std::string>());
  }
  return out;
}

// Fields that would change the answer in ways this server does not implement.
void refuse_unsupported(const json& body) {
  if (const json* n = field(body, "n"); n != nullptr && (!n->is_number_integer() || n->get<int64_t>() != 1))
    throw ApiError(400, "'n' must be 1: this server generates one choice per request", "n", "unsupported_value");
  if (const json* best_of = field(body, "best_of");
      best_of != nullptr && (!best_of->is_number_integer() || best_of->get<int64_t>() != 1))
    throw ApiError(400, "'best_of' must be 1 on this server", "best_of", "unsupported_value");
  for (const char* name : {"echo", "logprobs"}) {
    const json* f = field(body, name);
    if (f != nullptr && !(f->is_boolean() && !f->get<bool>()))
      throw ApiError(400, std::string("'") + name + "' is not supported by this server", name, "unsupported_value");
  }
  for (const char* name : {"suffix", "tools", "tool_choice", "functions", "logit_bias"}) {
    const json* f = field(body, name);
    if (f != nullptr && !((f->is_array() || f->is_object()) && f->empty()))
      throw ApiError(400, std::string("'") + name + "' is not supported by this server", name, "unsupported_value");
  }
}

}  // namespace

CompletionRequest parse_completion_request(std::string_view text, Endpoint endpoint, uint32_t max_tokens_limit) {
  json body;
  try {
    body = json::parse(text);
  } catch (const json::parse_error& e) {
    throw ApiError(400, std::string("the request body is not valid JSON: ") + e.what(), {}, "invalid_json");
  }
  if (!body.is_object()) throw ApiError(400, "the request body must be a JSON object", {}, "invalid_json");
  refuse_unsupported(body);

  CompletionRequest out;
  out.endpoint = endpoint;
  if (const json* model = field(body, "model")) {
    if (!model->is_string()) throw bad_field("model", "must be a string");
    out.model = model->get<std::string>();
  }
  if (endpoint == Endpoint::chat) out.messages = parse_messages(field(body, "messages"));
  else parse_prompt(field(body, "prompt"), out);

  const char* max_name = "max_tokens";
  const json* max_tokens = field(body, max_name);
  if (endpoint == Endpoint::chat && max_tokens == nullptr) {
    max_name = "max_completion_tokens";
    max_tokens = field(body, max_name);
  }
  if (max_tokens != nullptr) {
    const int64_t v = integer(*max_tokens, max_name);
    if (v < 1 || v > int64_t(max_tokens_limit))
      throw bad_field(max_name, "must be 1 to " + std::to_string(max_tokens_limit) + ", got " + std::to_string(v));
    out.max_tokens = uint32_t(v);
  }
  if (const json* t = field(body, "temperature")) out.temperature = number_in(*t, "temperature", 0.0, 2.0);
  if (const json* p = field(body, "top_p")) {
    out.top_p = number_in(*p, "top_p", 0.0, 1.0);
    if (*out.top_p <= 0.0) throw bad_field("top_p", "must be above 0");
  }
  if (const json* k = field(body, "top_k")) {
    const int64_t v = integer(*k, "top_k");
    if (v < 0 || v > int64_t(std::numeric_limits<uint32_t>::max())) throw bad_field("top_k", "must be 0 or more");
    out.top_k = uint32_t(v);
  }
  if (const json* seed = field(body, "seed")) out.seed = uint64_t(integer(*seed, "seed"));
  if (const json* stop = field(body, "stop")) out.stop = parse_stop(*stop);
  if (const json* stream = field(body, "stream")) {
    if (!stream->is_boolean()) throw bad_field("stream", "must be true or false");
    out.stream = stream->get<bool>();
  }
  return out;
}

}  // namespace moepage::serve
