// A transport's ticket handles: (generation << 32 | slot + 1), slots reused once retired, and a
// retired handle never valid again (its slot's generation moved on). Shared by the pinned-async and
// mapped transports. Not thread-safe: the transport's lock guards it. T derives from TicketSlot.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "moepage/cpp/error.hpp"
#include "moepage/moepage.h"

namespace moepage::transport {

// What TicketSlots keeps of every ticket; a transport's ticket state derives from it.
struct TicketSlot {
  uint32_t generation = 1;
  bool in_use = false;
  bool claimed = false;  // a wait() is blocked on it: a second waiter is refused
};

template <class T>
class TicketSlots {
 public:
  explicit TicketSlots(std::string who) : who_(std::move(who)) {}

  // A slot marked in use and unclaimed: a free one, or a new one. Its handle is handle(slot).
  uint32_t take() {
    uint32_t slot;
    if (!free_.empty()) {
      slot = free_.back();
      free_.pop_back();
    } else {
      slots_.push_back(std::make_unique<T>());
      slot = uint32_t(slots_.size() - 1);
    }
    slots_[slot]->in_use = true;
    slots_[slot]->claimed = false;
    return slot;
  }
  mp_ticket handle(uint32_t slot) const { return (uint64_t(slots_[slot]->generation) << 32) | (slot + 1); }
  T& operator[](uint32_t slot) { return *slots_[slot]; }

  // The slot of a live ticket; mp::Error(MP_ERR_INVALID_ARG) naming the transport and the call
  // for a ticket that is unknown, retired, or already being waited for.
  T& find(mp_ticket ticket, const char* op) {
    const uint64_t slot = ticket & 0xffffffffu;
    if (slot == 0 || slot > slots_.size() || !slots_[slot - 1]->in_use ||
        slots_[slot - 1]->generation != uint32_t(ticket >> 32))
      throw mp::Error(MP_ERR_INVALID_ARG, mp::format("{}: {}: unknown or already retired ticket {}", who_, op, ticket));
    if (slots_[slot - 1]->claimed)
      throw mp::Error(MP_ERR_INVALID_ARG,
                      mp::format("{}: {}: ticket {} is already being waited for", who_, op, ticket));
    return *slots_[slot - 1];
  }

  // The ticket is reported: its handle dies, its slot is free again.
  void retire(mp_ticket ticket) {
    const uint32_t slot = uint32_t(ticket & 0xffffffffu) - 1;
    T& t = *slots_[slot];
    t.in_use = false;
    t.claimed = false;
    ++t.generation;
    free_.push_back(slot);
  }

  // Every slot ever made, live or free (for a destructor's clean-up).
  template <class F>
  void for_each(F&& f) {
    for (auto& s : slots_) f(*s);
  }

 private:
  std::string who_;
  std::vector<std::unique_ptr<T>> slots_;
  std::vector<uint32_t> free_;
};

}  // namespace moepage::transport
