// moepage plugin SDK: one table per vtable. Each row is a callback: its name, where it lies, whether
// a component must provide it, and the ABI minor that added it. The loader's refusals, the
// conformance suites and the layout test (tests/abi) all read these rows, so adding a callback is
// one new row here plus the field in the C header.
//
// A callback is required of a plugin when its row says required and the plugin's manifest declares
// that minor or a later one: a plugin that declares 1.2 needs none of 1.4's callbacks, even when
// it was built with the 1.4 headers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "moepage/moepage.h"

namespace mp::abi {

struct Callback {
  const char* name;
  uint32_t offset;  // offsetof in the vtable
  uint32_t end;     // offset + the pointer's size: struct_size must reach this to hold it
  bool required;
  uint32_t since_minor;  // the ABI 1.x minor that appended it
};

#define MP_ABI_CALLBACK(vtable, field, required, since)                                                             \
  ::mp::abi::Callback {                                                                                             \
#field, static_cast < uint32_t>(offsetof(vtable, field)),                                                       \
        static_cast < uint32_t>(offsetof(vtable, field) + sizeof(static_cast <vtable*>(nullptr)->field)), required, \
        since                                                                                                       \
  }

inline constexpr Callback kTransportCallbacks[] = {
    MP_ABI_CALLBACK(mp_transport_vtable, create, true, 0),
    MP_ABI_CALLBACK(mp_transport_vtable, destroy, true, 0),
    MP_ABI_CALLBACK(mp_transport_vtable, last_error, true, 0),
    MP_ABI_CALLBACK(mp_transport_vtable, open, true, 0),
    MP_ABI_CALLBACK(mp_transport_vtable, submit, true, 0),
    MP_ABI_CALLBACK(mp_transport_vtable, wait, true, 0),
    MP_ABI_CALLBACK(mp_transport_vtable, poll, true, 0),
    MP_ABI_CALLBACK(mp_transport_vtable, stats, true, 0),
    MP_ABI_CALLBACK(mp_transport_vtable, ticket_event, false, 0),
    MP_ABI_CALLBACK(mp_transport_vtable, wait_result, true, 4),
    MP_ABI_CALLBACK(mp_transport_vtable, poll_result, true, 4),
};

inline constexpr Callback kPagerCallbacks[] = {
    MP_ABI_CALLBACK(mp_pager_vtable, create, true, 0),
    MP_ABI_CALLBACK(mp_pager_vtable, destroy, true, 0),
    MP_ABI_CALLBACK(mp_pager_vtable, last_error, true, 0),
    MP_ABI_CALLBACK(mp_pager_vtable, begin_token, true, 0),
    MP_ABI_CALLBACK(mp_pager_vtable, acquire, true, 0),
    MP_ABI_CALLBACK(mp_pager_vtable, observe, false, 0),
    MP_ABI_CALLBACK(mp_pager_vtable, hint, false, 0),
    MP_ABI_CALLBACK(mp_pager_vtable, stats, true, 0),
    MP_ABI_CALLBACK(mp_pager_vtable, layer_stats, true, 0),
    MP_ABI_CALLBACK(mp_pager_vtable, set_trace, false, 0),
    MP_ABI_CALLBACK(mp_pager_vtable, acquire_start, false, 5),
    MP_ABI_CALLBACK(mp_pager_vtable, acquire_await, false, 5),
    MP_ABI_CALLBACK(mp_pager_vtable, acquire_finish, false, 5),
    MP_ABI_CALLBACK(mp_pager_vtable, fixed_slots, false, 8),
    MP_ABI_CALLBACK(mp_pager_vtable, linear_predictor, false, 10),
    MP_ABI_CALLBACK(mp_pager_vtable, observe_scores, false, 10),
    MP_ABI_CALLBACK(mp_pager_vtable, residency, false, 11),
};

inline constexpr Callback kArchCallbacks[] = {
    MP_ABI_CALLBACK(mp_arch_vtable, probe, true, 0),           MP_ABI_CALLBACK(mp_arch_vtable, create, true, 0),
    MP_ABI_CALLBACK(mp_arch_vtable, destroy, true, 0),         MP_ABI_CALLBACK(mp_arch_vtable, last_error, true, 0),
    MP_ABI_CALLBACK(mp_arch_vtable, describe, true, 0),        MP_ABI_CALLBACK(mp_arch_vtable, expert_catalog, true, 0),
    MP_ABI_CALLBACK(mp_arch_vtable, bind_pager, true, 0),      MP_ABI_CALLBACK(mp_arch_vtable, reset, true, 0),
    MP_ABI_CALLBACK(mp_arch_vtable, forward, true, 0),         MP_ABI_CALLBACK(mp_arch_vtable, summary, false, 0),
    MP_ABI_CALLBACK(mp_arch_vtable, synthesize, false, 0),     MP_ABI_CALLBACK(mp_arch_vtable, stats, false, 1),
    MP_ABI_CALLBACK(mp_arch_vtable, forward_greedy, false, 2), MP_ABI_CALLBACK(mp_arch_vtable, join_ranks, false, 7),
};

#undef MP_ABI_CALLBACK

// The rows of a component kind's vtable; empty for an unknown kind.
inline std::span<const Callback> callbacks_of(int32_t kind) noexcept {
  switch (kind) {
    case MP_KIND_TRANSPORT: return kTransportCallbacks;
    case MP_KIND_PAGER: return kPagerCallbacks;
    case MP_KIND_ARCH: return kArchCallbacks;
    default: return {};
  }
}

// The descriptor's vtable of its own kind (nullptr when missing or the kind is unknown).
inline const void* vtable_of(const mp_component_descriptor& d) noexcept {
  switch (d.kind) {
    case MP_KIND_TRANSPORT: return d.transport;
    case MP_KIND_PAGER: return d.pager;
    case MP_KIND_ARCH: return d.arch;
    default: return nullptr;
  }
}

// The vtable size a plugin declaring `minor` must at least have: the end of its last required row.
inline uint32_t required_size(std::span<const Callback> rows, uint32_t minor) noexcept {
  uint32_t size = 0;
  for (const Callback& c : rows)
    if (c.required && c.since_minor <= minor && c.end > size) size = c.end;
  return size;
}

// The vtable's size in the headers of ABI 1.`minor`: the end of the last row that minor had.
inline uint32_t size_at_minor(std::span<const Callback> rows, uint32_t minor) noexcept {
  uint32_t size = 0;
  for (const Callback& c : rows)
    if (c.since_minor <= minor && c.end > size) size = c.end;
  return size;
}

// Whether the callback of `row` is present: inside the vtable's struct_size and not NULL.
inline bool provides(const void* vtable, const Callback& row) noexcept {
  uint32_t size = 0;
  std::memcpy(&size, vtable, sizeof size);
  if (size < row.end) return false;
  unsigned char bytes[sizeof(void (*)())];
  std::memcpy(bytes, static_cast<const unsigned char*>(vtable) + row.offset, sizeof bytes);
  for (unsigned char b : bytes)
    if (b != 0) return true;
  return false;
}

// What is wrong with a component's vtable for a plugin that declares `minor`: "" when nothing.
// Too small a struct_size is reported as such; otherwise every missing required callback is named.
inline std::string vtable_problem(const mp_component_descriptor& d, uint32_t minor) {
  const void* vtable = vtable_of(d);
  const std::span<const Callback> rows = callbacks_of(d.kind);
  if (vtable == nullptr || rows.empty()) return "no vtable of its kind";
  uint32_t size = 0;
  std::memcpy(&size, vtable, sizeof size);
  const uint32_t needed = required_size(rows, minor);
  if (size < needed)
    return "vtable struct_size " + std::to_string(size) + " is smaller than the " + std::to_string(needed) +
           " bytes ABI 1." + std::to_string(minor) + " requires";
  std::string missing;
  for (const Callback& c : rows)
    if (c.required && c.since_minor <= minor && !provides(vtable, c))
      missing += (missing.empty() ? "" : ", ") + std::string(c.name);
  return missing.empty() ? std::string() : "null required callback: " + missing;
}

}  // namespace mp::abi
