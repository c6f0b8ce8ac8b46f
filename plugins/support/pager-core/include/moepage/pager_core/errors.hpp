// The one exception type of the pager core. Every message is a single line that names what was
// wrong (layer, expert, file, line) and what was expected. Plugins catch it at the C boundary and
// turn it into status() plus the message.
#pragma once
#include <stdexcept>
#include <string>

#include "moepage/status.h"

namespace moepage::pager {

enum class ErrorKind {
  InvalidRequest,  // a plan/prefetch request the core cannot accept (range, duplicates, count)
  NotOwned,        // an expert this rank does not own (expert parallelism)
  SlotsBusy,       // not enough evictable slots because fills are still in flight: wait, then retry
  Budget,          // the memory budget cannot hold what the model needs
  Format,          // a malformed file or text (adapter, trace, meminfo)
};

class PagerError : public std::runtime_error {
 public:
  PagerError(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  ErrorKind kind() const noexcept { return kind_; }
  // The ABI status a plugin should return for this error.
  mp_status status() const noexcept;

 private:
  ErrorKind kind_;
};

}  // namespace moepage::pager
