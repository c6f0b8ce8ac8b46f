// Request parsing (every field's type and range, the refusals) and stop strings.
#include <doctest/doctest.h>

#include <string>
#include <utility>
#include <vector>

#include "serve/api_error.hpp"
#include "serve/completion_request.hpp"
#include "serve/stop_matcher.hpp"

using moepage::serve::ApiError;
using moepage::serve::Endpoint;
using moepage::serve::parse_completion_request;
using moepage::serve::StopMatcher;

namespace {

// The status and the field an error names.
std::pair<int, std::string> refusal(const std::string& body, Endpoint endpoint = Endpoint::completions) {
  try {
    parse_completion_request(body, endpoint, 4096);
  } catch (const ApiError& e) {
    return {e.status(), e.param()};
  }
  return {0, ""};
}

}  // namespace

TEST_CASE("a completion request with every field") {
  const auto r = parse_completion_request(
      R"({"model": "m", "prompt": "hi", "max_tokens": 7, "temperature": 0.5, "top_p": 0.9, "top_k": 40,
          "seed": 3, "stop": ["\n", "END"], "stream": true, "n": 1, "stream_options": {"include_usage": true}})",
      Endpoint::completions, 4096);
  CHECK(*r.model == "m");
  CHECK(*r.prompt_text == "hi");
  CHECK(*r.max_tokens == 7);
  CHECK(*r.temperature == 0.5);
  CHECK(*r.top_p == 0.9);
  CHECK(*r.top_k == 40);
  CHECK(*r.seed == 3);
  CHECK(r.stop == std::vector<std::string>{"\n", "END"});
  CHECK(r.stream);
}

TEST_CASE("prompts: text, one text in an array, token ids") {
  CHECK(*parse_completion_request(R"({"prompt": ["x"]})", Endpoint::completions, 8).prompt_text == "x");
  CHECK(*parse_completion_request(R"({"prompt": [1, 2]})", Endpoint::completions, 8).prompt_ids ==
        std::vector<int32_t>{1, 2});
  CHECK(refusal(R"({"prompt": ["a", "b"]})") == std::pair<int, std::string>{400, "prompt"});
  CHECK(refusal(R"({"prompt": [-1]})") == std::pair<int, std::string>{400, "prompt"});
  CHECK(refusal(R"({"prompt": []})") == std::pair<int, std::string>{400, "prompt"});
  CHECK(refusal(R"({})") == std::pair<int, std::string>{400, "prompt"});
}

TEST_CASE("wrong types and ranges name their field") {
  // Values out of type or range for each field, beside a valid prompt: the refusal names the field.
  const std::pair<std::string, std::vector<std::string>> bad_values[] = {
      {"max_tokens", {"0", "4097", "1.5", "18446744073709551615"}},
      {"temperature", {"2.5"}},
      {"top_p", {"0"}},
      {"top_k", {"-1"}},
      {"seed", {R"("s")"}},
      {"stop", {"3"}},
      {"stream", {"1"}},
      {"model", {"1"}},
      {"n", {"2"}},
      {"echo", {"true"}},
      {"logprobs", {"2"}}};
  for (const auto& [field, values] : bad_values) {
    for (const std::string& value : values) {
      const std::string body = R"({"prompt": "x", ")" + field + R"(": )" + value + "}";
      CAPTURE(body);
      CHECK(refusal(body).second == field);
    }
  }
  CHECK(refusal(R"([1, 2])").first == 400);
  CHECK(refusal(R"({"prompt": )").first == 400);
}

TEST_CASE("chat messages: roles, text parts, the last one a user turn") {
  const auto r = parse_completion_request(
      R"({"messages": [{"role": "system", "content": "s"},
                       {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}],
          "max_completion_tokens": 5})",
      Endpoint::chat, 4096);
  REQUIRE(r.messages.size() == 2);
  CHECK(r.messages[1].content == "ab");
  CHECK(*r.max_tokens == 5);
  CHECK(refusal(R"({"messages": []})", Endpoint::chat).second == "messages");
  CHECK(refusal(R"({"messages": [{"role": "tool", "content": "x"}]})", Endpoint::chat).second == "messages[0].role");
  CHECK(refusal(R"({"messages": [{"role": "user"}]})", Endpoint::chat).second == "messages[0].content");
  CHECK(refusal(R"({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]})", Endpoint::chat).second ==
        "messages[0].content");
  CHECK(refusal(R"({"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]})",
                Endpoint::chat)
            .second == "messages");
  CHECK(refusal(R"({"messages": [{"role": "user", "content": "q"}], "tools": [{"type": "function"}]})", Endpoint::chat)
            .second == "tools");
}

TEST_CASE("errors have OpenAI's shape") {
  const ApiError e(404, "no such model", "model", "model_not_found");
  CHECK(e.body() == nlohmann::json::parse(R"({"error": {"message": "no such model", "type": "not_found_error",
                                                         "param": "model", "code": "model_not_found"}})"));
  CHECK(ApiError(500, "x").body()["error"]["type"] == "server_error");
  CHECK(ApiError(400, "x").body()["error"]["param"].is_null());
}

TEST_CASE("stop strings: held back while they may still match, cut at the first match") {
  StopMatcher m({"END", "\n\n"});
  CHECK(m.push("Hello E") == "Hello ");  // "E" may start "END"
  CHECK(m.push("x") == "Ex");
  CHECK(m.push(" then\n") == " then");
  CHECK(m.push("\nmore") == "");
  CHECK(m.matched());
  CHECK(m.push("ignored") == "");
  CHECK(m.flush() == "");

  StopMatcher split({"STOP"});
  CHECK(split.push("aST") == "a");
  CHECK(split.push("OP tail") == "");
  CHECK(split.matched());

  StopMatcher none({"zz"});
  CHECK(none.push("abz") == "ab");
  CHECK(none.flush() == "z");
  CHECK_FALSE(none.matched());

  StopMatcher empty({""});
  CHECK(empty.push("text") == "text");
}
