#include "ablate/trace_input.hpp"

#include <stdexcept>

namespace moepage::ablate {

pager::Trace load_trace(const std::filesystem::path& path) {
  if (!std::filesystem::is_regular_file(path)) throw std::runtime_error("trace " + path.string() + " does not exist");
  return pager::read_trace_file(path.string());
}

}  // namespace moepage::ablate
