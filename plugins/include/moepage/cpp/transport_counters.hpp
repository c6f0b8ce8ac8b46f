// moepage plugin SDK, plugin side: the counters behind a transport's stats(), safe to add to from
// reader threads while another thread reads them.
#pragma once

#include <atomic>
#include <cstdint>

#include "moepage/cpp/structs.hpp"
#include "moepage/moepage.h"

namespace mp {

struct TransportCounters {
  std::atomic<uint64_t> requests{0};    // read requests completed
  std::atomic<uint64_t> bytes_read{0};  // bytes read from files
  std::atomic<uint64_t> read_ns{0}, copy_ns{0}, wait_ns{0};
  std::atomic<uint64_t> errors{0};  // requests that failed

  // The body of a transport's stats(): the counters now, written as far as the caller's
  // struct_size reaches (mp::write_out; `who` names the transport in its error).
  mp_status write(mp_transport_stats* out, const char* who) const {
    mp_transport_stats s{};
    s.requests = requests;
    s.bytes_read = bytes_read;
    s.read_ns = read_ns;
    s.copy_ns = copy_ns;
    s.wait_ns = wait_ns;
    s.errors = errors;
    write_out(out, s, who);
    return MP_OK;
  }
};

}  // namespace mp
