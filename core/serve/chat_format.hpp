// Turning a chat (a list of role + content messages) into the one prompt text the model reads.
//
// deepseek-v4: DeepSeek-V4's conversation format in its non-thinking ("chat") mode, for models
// whose tokenizer has its role tokens. The prompt opens with <｜begin▁of▁sentence｜>; a system
// message is its text as is; a user message is <｜User｜> + text; an assistant message in the
// history is its text + <｜end▁of▁sentence｜>. A user message that an assistant turn follows (or
// that ends the chat) is followed by <｜Assistant｜></think>: the empty think block says "answer
// without reasoning". The rendered text holds the special tokens, so it is encoded without the
// tokenizer adding a BOS of its own.
//
// plain: for models that declare no format (e.g. a base model). Every message is
// "<Role>: <text>" followed by a blank line, roles spelled System, User and Assistant, and the
// prompt ends with "Assistant:" for the model to continue. The tokenizer adds its BOS as it does
// for `moepage run --prompt`, so a chat's prompt is exactly the run of its rendered text.
#pragma once
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "tokenizer/tokenizer.hpp"

namespace moepage::serve {

enum class ChatFormat { deepseek_v4, plain };

struct ChatMessage {
  std::string role;  // system | user | assistant | developer (rendered as a user turn)
  std::string content;
};

// "deepseek-v4" or "plain".
std::string_view chat_format_name(ChatFormat format);
// The format named `name`; nullopt for anything else.
std::optional<ChatFormat> chat_format_from_name(std::string_view name);
// deepseek-v4 when the tokenizer has DeepSeek-V4's role and end-of-sentence tokens, else plain.
ChatFormat detect_chat_format(const tokenizer::Tokenizer* tok);
// Whether the prompt text is encoded with the tokenizer's own special tokens (its BOS) added.
bool tokenizer_adds_bos(ChatFormat format);

// The prompt text for `messages`, ending where the assistant's reply begins. The caller makes
// sure the roles are those above and the last message is a user turn (parse_chat_messages does).
std::string render_chat(ChatFormat format, std::span<const ChatMessage> messages);

}  // namespace moepage::serve
