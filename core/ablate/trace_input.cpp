#include "ablate/trace_input.hpp"

#include <sstream>
#include <stdexcept>

#include "ablate/child_process.hpp"

namespace moepage::ablate {
namespace {

// Runs xz with `args`; a failure carries xz's own message, and only a missing xz gets the hint.
std::string run_xz(const std::vector<std::string>& args, const std::filesystem::path& path) {
  try {
    return capture_stdout(args);
  } catch (const std::exception& e) {
    const std::string what = e.what();
    const bool no_xz = what.find("exit code 127: exec failed") != std::string::npos;
    throw std::runtime_error("cannot decompress trace " + path.string() + ": " +
                             (no_xz ? "xz cannot be run (install xz-utils)" : what));
  }
}

// The decompressed size xz's index records ("totals" line of --robot --list, fifth column), so
// a trace that would decompress past the limit is refused before a byte of it is written.
uint64_t uncompressed_size(const std::filesystem::path& path) {
  std::istringstream listing(run_xz({"xz", "--robot", "--list", "--", path.string()}, path));
  std::string line;
  while (std::getline(listing, line)) {
    std::istringstream fields(line);
    std::string tag;
    uint64_t streams = 0, blocks = 0, compressed = 0, uncompressed = 0;
    if (fields >> tag && tag == "totals" && fields >> streams >> blocks >> compressed >> uncompressed) return uncompressed;
  }
  throw std::runtime_error("cannot decompress trace " + path.string() + ": xz --list gave no totals line");
}

}  // namespace

pager::Trace load_trace(const std::filesystem::path& path) {
  if (!std::filesystem::is_regular_file(path)) throw std::runtime_error("trace " + path.string() + " does not exist");
  if (path.extension() != ".xz") return pager::read_trace_file(path.string());
  if (const uint64_t size = uncompressed_size(path); size > pager::kMaxTraceFileBytes) {
    throw std::runtime_error("trace " + path.string() + " decompresses to " + std::to_string(size) + " bytes; at most " +
                             std::to_string(pager::kMaxTraceFileBytes) + " are read");
  }
  const std::string text = run_xz({"xz", "-dc", "--", path.string()}, path);
  return pager::parse_trace(text, path.string());
}

}  // namespace moepage::ablate
