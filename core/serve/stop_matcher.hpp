// The `stop` strings of a request: generated text passes through here on its way to the client.
// Text that might be the start of a stop string is held back until the next piece decides, so a
// client never sees any part of a stop string, and the reply ends where the first one begins.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace moepage::serve {

class StopMatcher {
 public:
  explicit StopMatcher(std::vector<std::string> stops);
  // Appends `piece`; returns the text now safe to send. After a match, returns the text before
  // the stop string and matched() is true; later pieces are ignored.
  std::string push(std::string_view piece);
  // The text held back, when generation ends without a match.
  std::string flush();
  bool matched() const { return matched_; }

 private:
  std::vector<std::string> stops_;
  std::string held_;
  bool matched_ = false;
};

}  // namespace moepage::serve
