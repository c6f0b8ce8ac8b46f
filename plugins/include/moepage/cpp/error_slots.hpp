// moepage plugin SDK, plugin side: where last_error() messages live. Each thread keeps its own
// few most recent failures, keyed by instance, so a message a thread reads can be neither replaced
// nor freed by another thread failing on the same instance at the same moment (the per-instance
// string this replaces could be reassigned while the host still read it).
//
// The storage is fixed-size and trivially destructible thread-local memory: no allocation while
// recording an error, and no thread-exit destructor that would pin the plugin library in memory
// after dlclose. Messages longer than kErrorBytes - 1 bytes are cut there.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>

namespace mp::detail {

inline constexpr size_t kErrorSlots = 4;     // instances a thread can have failed on and still ask
inline constexpr size_t kErrorBytes = 1024;  // per message, NUL included

struct ErrorSlot {
  uint64_t instance = 0;  // 0: empty
  char message[kErrorBytes] = {};
};

struct ThreadErrors {
  ErrorSlot slots[kErrorSlots] = {};
  uint32_t next = 0;  // the slot a new instance takes (round robin: the oldest is dropped)
};

inline ThreadErrors& thread_errors() noexcept {
  thread_local ThreadErrors errors;
  return errors;
}

// A process-unique, never reused id for an instance (addresses can be reused after delete).
inline uint64_t new_instance_id() noexcept {
  static std::atomic<uint64_t> last{0};
  return last.fetch_add(1, std::memory_order_relaxed) + 1;
}

// Records `message` as the calling thread's last failure on `instance`.
inline void record_error(uint64_t instance, const char* message) noexcept {
  ThreadErrors& t = thread_errors();
  ErrorSlot* slot = nullptr;
  for (ErrorSlot& s : t.slots)
    if (s.instance == instance) slot = &s;
  if (slot == nullptr) {
    slot = &t.slots[t.next];
    t.next = static_cast<uint32_t>((t.next + 1) % kErrorSlots);
  }
  slot->instance = instance;
  const size_t n = message == nullptr ? 0 : std::min(std::strlen(message), kErrorBytes - 1);
  if (n > 0) std::memcpy(slot->message, message, n);
  slot->message[n] = '\0';
}

// The calling thread's last failure on `instance`; "" when it has none.
inline const char* recorded_error(uint64_t instance) noexcept {
  for (const ErrorSlot& s : thread_errors().slots)
    if (s.instance == instance) return s.message;
  return "";
}

// Forgets the calling thread's message for `instance` (when the instance is destroyed).
inline void forget_error(uint64_t instance) noexcept {
  for (ErrorSlot& s : thread_errors().slots)
    if (s.instance == instance) s.instance = 0;
}

}  // namespace mp::detail
