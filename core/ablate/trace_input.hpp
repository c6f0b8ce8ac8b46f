// Reading a trace for `moepage simulate`: plain text, or xz-compressed (".xz", decoded by the
// pager core's reader with liblzma).
#pragma once
#include <filesystem>

#include "moepage/pager_core/trace.hpp"

namespace moepage::ablate {

// Throws std::runtime_error when the file does not exist and pager::PagerError when it cannot be
// read, decompressed or parsed; both name the file.
pager::Trace load_trace(const std::filesystem::path& path);

}  // namespace moepage::ablate
