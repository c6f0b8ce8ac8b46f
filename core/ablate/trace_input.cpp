#include "ablate/trace_input.hpp"

#include <stdexcept>

#include "ablate/child_process.hpp"

namespace moepage::ablate {

pager::Trace load_trace(const std::filesystem::path& path) {
  if (!std::filesystem::is_regular_file(path)) throw std::runtime_error("trace " + path.string() + " does not exist");
  if (path.extension() != ".xz") return pager::read_trace_file(path.string());
  std::string text;
  try {
    text = capture_stdout({"xz", "-dc", "--", path.string()});
  } catch (const std::exception& e) {
    throw std::runtime_error("cannot decompress trace " + path.string() + " (is xz-utils installed?): " + e.what());
  }
  return pager::parse_trace(text, path.string());
}

}  // namespace moepage::ablate
