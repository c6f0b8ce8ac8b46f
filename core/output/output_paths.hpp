// Output paths checked before a command does any work: each must lie in an existing, writable
// folder, must not be a folder, and must not name an input or another output (the same file by
// path, symbolic link or hard link), so a long run never ends by failing to write its results
// or by overwriting the model it read.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

namespace moepage::output {

struct NamedPath {
  std::string what;  // "--stats-json", "the model's config.json"
  std::filesystem::path path;
};

// Throws OutputError naming both paths (or the output and the reason) for the first conflict.
void check_output_paths(const std::vector<NamedPath>& outputs, const std::vector<NamedPath>& inputs);

// Every regular file directly in `folder` as an input named "<what> <file name>" (a model folder:
// its config, checkpoint and tokenizer files are all read).
std::vector<NamedPath> files_in(const std::filesystem::path& folder, const std::string& what);

}  // namespace moepage::output
