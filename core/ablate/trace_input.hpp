// Reading a trace for `moepage simulate`: plain text, or xz-compressed (".xz", decompressed by
// the `xz` program, which the set-up installs; the library itself has no xz decoder).
#pragma once
#include <filesystem>

#include "moepage/pager_core/trace.hpp"

namespace moepage::ablate {

// Throws pager::PagerError for a malformed trace, std::runtime_error when the file cannot be
// read or xz fails; both name the file.
pager::Trace load_trace(const std::filesystem::path& path);

}  // namespace moepage::ablate
