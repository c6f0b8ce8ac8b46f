#include "serve/chat_format.hpp"

namespace moepage::serve {
namespace {

// DeepSeek-V4's special tokens (fullwidth vertical bars U+FF5C, U+2581 between words).
constexpr std::string_view kBeginOfSentence = "<\uFF5Cbegin\u2581of\u2581sentence\uFF5C>";
constexpr std::string_view kEndOfSentence = "<\uFF5Cend\u2581of\u2581sentence\uFF5C>";
constexpr std::string_view kUser = "<\uFF5CUser\uFF5C>";
constexpr std::string_view kAssistant = "<\uFF5CAssistant\uFF5C>";
constexpr std::string_view kThinkEnd = "</think>";

bool is_user_turn(const ChatMessage& m) { return m.role == "user" || m.role == "developer"; }

std::string render_deepseek_v4(std::span<const ChatMessage> messages) {
  std::string out(kBeginOfSentence);
  for (size_t i = 0; i < messages.size(); ++i) {
    const ChatMessage& m = messages[i];
    if (m.role == "system") {
      out += m.content;
    } else if (is_user_turn(m)) {
      out += kUser;
      out += m.content;
      // The assistant's turn opens after a user message it follows, or after the last one.
      const bool reply_follows = i + 1 == messages.size() || messages[i + 1].role == "assistant";
      if (reply_follows) {
        out += kAssistant;
        out += kThinkEnd;
      }
    } else {  // assistant
      out += m.content;
      out += kEndOfSentence;
    }
  }
  return out;
}

std::string plain_role(const std::string& role) {
  if (role == "system") return "System";
  if (role == "assistant") return "Assistant";
  return "User";
}

std::string render_plain(std::span<const ChatMessage> messages) {
  std::string out;
  for (const ChatMessage& m : messages) out += plain_role(m.role) + ": " + m.content + "\n\n";
  return out + "Assistant:";
}

}  // namespace

std::string_view chat_format_name(ChatFormat format) {
  return format == ChatFormat::deepseek_v4 ? "deepseek-v4" : "plain";
}

std::optional<ChatFormat> chat_format_from_name(std::string_view name) {
  if (name == "deepseek-v4") return ChatFormat::deepseek_v4;
  if (name == "plain") return ChatFormat::plain;
  return std::nullopt;
}

ChatFormat detect_chat_format(const tokenizer::Tokenizer* tok) {
  if (tok == nullptr) return ChatFormat::plain;
  for (std::string_view token : {kBeginOfSentence, kEndOfSentence, kUser, kAssistant}) {
    if (!tok->token_to_id(token)) return ChatFormat::plain;
  }
  return ChatFormat::deepseek_v4;
}

bool tokenizer_adds_bos(ChatFormat format) { return format == ChatFormat::plain; }

std::string render_chat(ChatFormat format, std::span<const ChatMessage> messages) {
  return format == ChatFormat::deepseek_v4 ? render_deepseek_v4(messages) : render_plain(messages);
}

}  // namespace moepage::serve
