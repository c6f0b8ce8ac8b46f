// The cap on requests handled at once. A request holds a slot from its handler's start until its
// response is written (for a stream: until the stream ends), and one beyond the cap gets a 429
// instead of waiting. The HTTP thread pool has a few threads more than the cap so refusals can
// still be answered while every slot is busy.
#pragma once
#include <atomic>
#include <cstddef>
#include <memory>

#include "serve/api_error.hpp"

namespace moepage::serve {

class ConnectionLimit {
 public:
  explicit ConnectionLimit(size_t limit) : limit_(limit) {}
  // A slot, freed when the last copy of the pointer goes. Throws ApiError 429 when none is free.
  std::shared_ptr<void> acquire() {
    if (active_.fetch_add(1) >= limit_) {
      active_.fetch_sub(1);
      throw ApiError(429, "too many concurrent requests (the limit is " + std::to_string(limit_) + ")", {},
                     "too_many_connections");
    }
    return std::shared_ptr<void>(nullptr, [this](void*) { active_.fetch_sub(1); });
  }
  size_t active() const { return active_.load(); }

 private:
  size_t limit_;
  std::atomic<size_t> active_{0};
};

}  // namespace moepage::serve
