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
    // xz's own message says what is wrong with the file; only a missing xz gets the install hint.
    const std::string what = e.what();
    const bool no_xz = what.find("exit code 127: exec failed") != std::string::npos;
    throw std::runtime_error("cannot decompress trace " + path.string() + ": " +
                             (no_xz ? "xz cannot be run (install xz-utils)" : what));
  }
  return pager::parse_trace(text, path.string());
}

}  // namespace moepage::ablate
