// A Hugging Face safetensors checkpoint folder: config.json plus model.safetensors, or shards
// listed by model.safetensors.index.json. Opening validates every header and the index against
// the files; no tensor bytes are read. Dense tensors are viewed through a read-only mapping;
// routed experts are addressed as byte ranges for positional reads.
#pragma once
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "checkpoint/checkpoint_error.hpp"
#include "checkpoint/mapped_file.hpp"
#include "dtype/dtype.hpp"

namespace moepage::ckpt {

struct TensorInfo {
  std::string name;
  Dtype dtype = Dtype::F32;
  std::vector<uint64_t> shape;
  uint32_t file_index = 0;          // into Checkpoint::files()
  std::filesystem::path file_path;  // absolute
  uint64_t offset = 0;              // absolute byte offset in the file
  uint64_t nbytes = 0;

  uint64_t elements() const;
};

// Where a tensor's bytes are, for pread.
struct ByteRange {
  uint32_t file_index = 0;
  uint64_t offset = 0;
  uint64_t length = 0;
};

class Checkpoint {
 public:
  // `path` is a checkpoint folder (index or model.safetensors or *.safetensors) or one
  // .safetensors file. Throws CheckpointError with a one-line message naming the file and tensor.
  static Checkpoint open(const std::filesystem::path& path);

  Checkpoint(Checkpoint&&) noexcept = default;
  Checkpoint& operator=(Checkpoint&&) noexcept = default;

  const std::filesystem::path& dir() const { return dir_; }
  bool sharded() const { return sharded_; }
  const std::vector<std::filesystem::path>& files() const { return paths_; }
  uint64_t file_size(uint32_t file_index) const;

  // Every tensor, sorted by name.
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const TensorInfo* find(std::string_view name) const;
  // Like find, but a missing tensor is a CheckpointError naming the folder and the tensor.
  const TensorInfo& at(std::string_view name) const;

  // Read-only bytes of a dense tensor through the file's mapping (mapped once, on first use).
  std::span<const uint8_t> view(std::string_view name) const;
  std::span<const uint8_t> view(const TensorInfo& t) const;
  ByteRange byte_range(std::string_view name) const;

  // Positional read of a whole tensor (tests and tools; the hot path reads through a transport).
  void read(const TensorInfo& t, std::span<uint8_t> out) const;

 private:
  Checkpoint() = default;
  std::filesystem::path dir_;
  bool sharded_ = false;
  std::vector<std::filesystem::path> paths_;
  std::vector<std::unique_ptr<MappedFile>> files_;
  std::vector<TensorInfo> tensors_;
  std::map<std::string, size_t, std::less<>> by_name_;
};

}  // namespace moepage::ckpt
