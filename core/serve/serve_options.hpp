// What `moepage serve` is told on its command line about the HTTP side.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "serve/chat_format.hpp"

namespace moepage::serve {

struct ServeOptions {
  std::string host = "127.0.0.1";      // loopback unless told otherwise
  int port = 8080;                     // 0: any free port (the chosen one is printed)
  std::optional<std::string> api_key;  // when set: Authorization: Bearer KEY on /v1 and /admin
  std::string model_id;                // the name /v1/models lists and requests must use
  ChatFormat chat_format = ChatFormat::plain;
  size_t max_body_bytes = 1 << 20;
  uint32_t max_tokens_limit = 4096;
  size_t max_connections = 16;  // requests handled at once; more get a 429
  size_t max_queue = 64;        // generations waiting for the engine; more get a 429
};

}  // namespace moepage::serve
