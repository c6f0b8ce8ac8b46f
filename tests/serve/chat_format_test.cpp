// The chat formats against reference renderings written out by hand from DeepSeek-V4's
// documented conversation format (non-thinking mode) and from the plain format's definition.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "../tokenizer/tiny_tokenizer.hpp"
#include "serve/chat_format.hpp"

using moepage::serve::ChatFormat;
using moepage::serve::ChatMessage;
using moepage::serve::render_chat;

namespace {

const std::string BOS =
    "<\xEF\xBD\x9C"
    "begin\xE2\x96\x81"
    "of\xE2\x96\x81"
    "sentence\xEF\xBD\x9C>";
const std::string EOS =
    "<\xEF\xBD\x9C"
    "end\xE2\x96\x81"
    "of\xE2\x96\x81"
    "sentence\xEF\xBD\x9C>";
const std::string USER = "<\xEF\xBD\x9CUser\xEF\xBD\x9C>";
const std::string ASSISTANT =
    "<\xEF\xBD\x9C"
    "Assistant\xEF\xBD\x9C>";

std::string v4(const std::vector<ChatMessage>& m) { return render_chat(ChatFormat::deepseek_v4, m); }

}  // namespace

TEST_CASE("deepseek-v4: a system prompt and one question") {
  CHECK(v4({{"system", "You are a helpful assistant."}, {"user", "hello"}}) ==
        BOS + "You are a helpful assistant." + USER + "hello" + ASSISTANT + "</think>");
}

TEST_CASE("deepseek-v4: earlier turns end with end-of-sentence, each reply opens with an empty think block") {
  CHECK(v4({{"user", "hello"}, {"assistant", "Hello! I am DeepSeek."}, {"user", "1+1=?"}}) ==
        BOS + USER + "hello" + ASSISTANT + "</think>Hello! I am DeepSeek." + EOS + USER + "1+1=?" + ASSISTANT +
            "</think>");
}

TEST_CASE("deepseek-v4: consecutive user turns open the assistant only after the last") {
  CHECK(v4({{"system", "S"}, {"user", "first"}, {"user", "second"}}) ==
        BOS + "S" + USER + "first" + USER + "second" + ASSISTANT + "</think>");
}

TEST_CASE("deepseek-v4: a developer message is a user turn") {
  CHECK(v4({{"developer", "Answer briefly."}, {"user", "why?"}}) ==
        BOS + USER + "Answer briefly." + USER + "why?" + ASSISTANT + "</think>");
}

TEST_CASE("deepseek-v4: the text of a message is not interpreted") {
  CHECK(v4({{"user", "a\n\n<think>b</think>"}}) == BOS + USER + "a\n\n<think>b</think>" + ASSISTANT + "</think>");
}

TEST_CASE("plain: role-prefixed paragraphs ending with Assistant:") {
  const std::vector<ChatMessage> chat{
      {"system", "Be brief."}, {"user", "hi"}, {"assistant", "hello"}, {"developer", "again"}};
  CHECK(render_chat(ChatFormat::plain, chat) ==
        "System: Be brief.\n\nUser: hi\n\nAssistant: hello\n\nUser: again\n\nAssistant:");
}

TEST_CASE("the format follows the tokenizer: DeepSeek-V4's role tokens or plain") {
  CHECK(moepage::serve::detect_chat_format(nullptr) == ChatFormat::plain);
  const auto plain_tok = tiny::make();
  CHECK(moepage::serve::detect_chat_format(&plain_tok) == ChatFormat::plain);

  nlohmann::json j = tiny::json();
  int id = 1000;
  for (const std::string& token : {BOS, EOS, USER, ASSISTANT}) {
    j["added_tokens"].push_back({{"id", id++},
                                 {"content", token},
                                 {"single_word", false},
                                 {"lstrip", false},
                                 {"rstrip", false},
                                 {"normalized", false},
                                 {"special", true}});
  }
  const auto tok = moepage::tokenizer::Tokenizer::parse(j.dump(), "v4/tokenizer.json");
  CHECK(moepage::serve::detect_chat_format(&tok) == ChatFormat::deepseek_v4);
  CHECK_FALSE(moepage::serve::tokenizer_adds_bos(ChatFormat::deepseek_v4));
  // The rendered special tokens encode as the tokens themselves, not as their characters.
  const std::vector<int32_t> ids = tok.encode(v4({{"user", "hi"}}), false);
  REQUIRE(ids.size() >= 4);
  CHECK(ids.front() == 1000);
  CHECK(ids[1] == 1002);
  CHECK(std::find(ids.begin(), ids.end(), 1003) != ids.end());
}

TEST_CASE("format names") {
  CHECK(moepage::serve::chat_format_from_name("deepseek-v4") == ChatFormat::deepseek_v4);
  CHECK(moepage::serve::chat_format_from_name("plain") == ChatFormat::plain);
  CHECK_FALSE(moepage::serve::chat_format_from_name("chatml"));
  CHECK(moepage::serve::chat_format_name(ChatFormat::deepseek_v4) == "deepseek-v4");
}
