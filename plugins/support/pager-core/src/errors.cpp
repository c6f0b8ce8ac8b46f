#include "moepage/pager_core/errors.hpp"

namespace moepage::pager {

mp_status PagerError::status() const noexcept {
  switch (kind_) {
    case ErrorKind::Format: return MP_ERR_IO;
    case ErrorKind::InvalidRequest:
    case ErrorKind::NotOwned:
    case ErrorKind::SlotsBusy:
    case ErrorKind::Budget: return MP_ERR_INVALID_ARG;
  }
  return MP_ERR_INTERNAL;
}

}  // namespace moepage::pager
