#include "support/temp_dir.hpp"

#include <unistd.h>

#include <atomic>
#include <fstream>
#include <stdexcept>

#include "fileio/text_file.hpp"

namespace moepage::test {
namespace fs = std::filesystem;

fs::path unique_temp_path(const std::string& tag) {
  static std::atomic<int> counter{0};
  return fs::temp_directory_path() /
         ("moepage-" + tag + "-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
}

TempDir::TempDir(const std::string& tag) : path_(unique_temp_path(tag)) {
  // A folder left by an earlier process with the same pid would otherwise leak into this test.
  fs::remove_all(path_);
  fs::create_directories(path_);
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

fs::path TempDir::write(const std::string& relative, std::string_view text) const {
  const fs::path file = path_ / relative;
  fs::create_directories(file.parent_path());
  write_file(file, text);
  return file;
}

TempFile::~TempFile() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

void write_file(const fs::path& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
  out.close();
  if (!out) throw std::runtime_error(path.string() + ": cannot write");
}

void write_file(const fs::path& path, const std::vector<uint8_t>& bytes) {
  write_file(path, std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

std::string read_file(const fs::path& path) { return fileio::read_file(path); }

std::vector<uint8_t> read_file_bytes(const fs::path& path) {
  const std::string bytes = fileio::read_file(path);
  return std::vector<uint8_t>(bytes.begin(), bytes.end());
}

}  // namespace moepage::test
