#include "output/output_paths.hpp"

#include <sys/stat.h>
#include <unistd.h>
#include <cerrno>
#include <cstring>

#include "output/output_file.hpp"

namespace moepage::output {
namespace fs = std::filesystem;
namespace {

bool is_regular_or_absent(const fs::path& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) != 0 || S_ISREG(st.st_mode);
}

// The same file: one inode when both exist, else one normalised absolute path.
bool same_file(const fs::path& a, const fs::path& b) {
  std::error_code ec;
  if (fs::exists(a, ec) && fs::exists(b, ec)) return fs::equivalent(a, b, ec);
  return fs::weakly_canonical(fs::absolute(a), ec) == fs::weakly_canonical(fs::absolute(b), ec);
}

void check_writable_place(const NamedPath& out) {
  std::error_code ec;
  if (out.path.empty()) throw OutputError(out.what + ": the path is empty");
  if (fs::is_directory(out.path, ec)) throw OutputError(out.what + ": " + out.path.string() + " is a folder");
  if (!is_regular_or_absent(out.path)) {
    if (::access(out.path.c_str(), W_OK) != 0)
      throw OutputError(out.what + ": cannot write " + out.path.string() + ": " + std::strerror(errno));
    return;  // a device or FIFO is written in place
  }
  fs::path folder = fs::absolute(out.path, ec).parent_path();
  if (!fs::is_directory(folder, ec))
    throw OutputError(out.what + ": cannot write " + out.path.string() + ": folder " + folder.string() +
                      " does not exist");
  // The temporary file is created in the folder, so the folder itself must be writable.
  if (::access(folder.c_str(), W_OK | X_OK) != 0)
    throw OutputError(out.what + ": cannot write " + out.path.string() + ": folder " + folder.string() + ": " +
                      std::strerror(errno));
}

}  // namespace

void check_output_paths(const std::vector<NamedPath>& outputs, const std::vector<NamedPath>& inputs) {
  for (size_t i = 0; i < outputs.size(); ++i) {
    const NamedPath& out = outputs[i];
    check_writable_place(out);
    for (const NamedPath& in : inputs) {
      if (same_file(out.path, in.path))
        throw OutputError(out.what + " " + out.path.string() + " names an input: " + in.what + " " + in.path.string());
    }
    if (!is_regular_or_absent(out.path)) continue;  // /dev/null twice is harmless
    for (size_t j = 0; j < i; ++j) {
      if (same_file(out.path, outputs[j].path))
        throw OutputError(out.what + " " + out.path.string() + " names the same file as " + outputs[j].what + " " +
                          outputs[j].path.string());
    }
  }
}

std::vector<NamedPath> files_in(const fs::path& folder, const std::string& what) {
  std::vector<NamedPath> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(folder, ec)) {
    if (e.is_regular_file(ec)) out.push_back({what + " " + e.path().filename().string(), e.path()});
  }
  return out;
}

}  // namespace moepage::output
