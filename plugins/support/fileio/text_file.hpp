// Reading a whole file into memory: configs, token-id lists, JSON, child-process output.
#pragma once
#include <filesystem>
#include <optional>
#include <string>

namespace moepage::fileio {

// The file's bytes, or nullopt when it cannot be opened or read; `why`, when given, receives the
// system's reason ("No such file or directory"). Callers that have their own wording for a
// missing file use this one.
std::optional<std::string> try_read_file(const std::filesystem::path& path, std::string* why = nullptr);

// The file's bytes; std::runtime_error "<path>: cannot read: <reason>" when it cannot be read.
std::string read_file(const std::filesystem::path& path);

}  // namespace moepage::fileio
