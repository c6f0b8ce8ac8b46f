#include "serve/stop_matcher.hpp"

#include <algorithm>

namespace moepage::serve {

StopMatcher::StopMatcher(std::vector<std::string> stops) : stops_(std::move(stops)) {
  std::erase_if(stops_, [](const std::string& s) { return s.empty(); });
}

std::string StopMatcher::push(std::string_view piece) {
  if (matched_) return {};
  held_ += piece;
  // The earliest stop string wins.
  size_t first = std::string::npos;
  for (const std::string& stop : stops_) first = std::min(first, held_.find(stop));
  if (first != std::string::npos) {
    matched_ = true;
    std::string out = held_.substr(0, first);
    held_.clear();
    return out;
  }
  // Hold back the longest tail that is a proper prefix of some stop string.
  size_t keep = 0;
  for (const std::string& stop : stops_) {
    for (size_t n = std::min(stop.size() - 1, held_.size()); n > keep; --n) {
      if (held_.compare(held_.size() - n, n, stop, 0, n) == 0) {
        keep = n;
        break;
      }
    }
  }
  std::string out = held_.substr(0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  return out;
}

std::string StopMatcher::flush() {
  if (matched_) return {};
  std::string out;
  out.swap(held_);
  return out;
}

}  // namespace moepage::serve
