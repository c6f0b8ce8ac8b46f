// Temporary files and folders for tests: unique names under the system temp folder, removed with
// everything in them when the test is done with them.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace moepage::test {

// moepage-<tag>-<pid>-<n>: unique within and across test processes. Nothing is created.
std::filesystem::path unique_temp_path(const std::string& tag);

// A fresh, empty folder, removed with everything in it at scope exit.
class TempDir {
 public:
  explicit TempDir(const std::string& tag = "test");
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

  // Writes `text` to `relative` (creating folders) and returns the file's path.
  std::filesystem::path write(const std::string& relative, std::string_view text) const;

 private:
  std::filesystem::path path_;
};

// A file the test fills, removed at scope exit (whatever the test left there).
class TempFile {
 public:
  explicit TempFile(const std::string& tag) : path_(unique_temp_path(tag)) {}
  ~TempFile();
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// Whole-file helpers; a failure is a std::runtime_error naming the path.
void write_file(const std::filesystem::path& path, std::string_view bytes);
void write_file(const std::filesystem::path& path, const std::vector<uint8_t>& bytes);
std::string read_file(const std::filesystem::path& path);
std::vector<uint8_t> read_file_bytes(const std::filesystem::path& path);

}  // namespace moepage::test
