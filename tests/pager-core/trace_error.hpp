// What parse_trace says about a text: the trace tests compare whole messages, file and line included.
#pragma once
#include <string>
#include <string_view>

#include "moepage/pager_core/errors.hpp"
#include "moepage/pager_core/trace.hpp"

namespace moepage::pager::testing {

// The PagerError message for `text` read as `name`, or "(no error)" when it parses.
inline std::string trace_error(std::string_view text, std::string_view name) {
  try {
    parse_trace(text, name);
  } catch (const PagerError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace moepage::pager::testing
