#include "checkpoint/safetensors_writer.hpp"

#include <fcntl.h>
#include <unistd.h>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "checkpoint/checkpoint_error.hpp"
#include "checkpoint/safetensors_header.hpp"

namespace moepage::ckpt {

SafetensorsWriter::SafetensorsWriter(std::filesystem::path path) : path_(std::move(path)) {}

SafetensorsWriter::~SafetensorsWriter() {
  if (fd_ >= 0) ::close(fd_);
}

void SafetensorsWriter::declare(const std::string& name, Dtype dtype, std::vector<uint64_t> shape) {
  if (begun_) throw CheckpointError(path_.string() + ": tensor '" + name + "' declared after the header was written");
  if (name.empty() || name == "__metadata__")
    throw CheckpointError(path_.string() + ": invalid tensor name '" + name + "'");
  Entry e{dtype, std::move(shape)};
  uint64_t bytes = 0;
  if (!tensor_byte_size(e.shape, dtype, bytes))
    throw CheckpointError(path_.string() + ": tensor '" + name + "': shape overflows");
  if (!entries_.emplace(name, std::move(e)).second) {
    throw CheckpointError(path_.string() + ": tensor '" + name + "' declared twice");
  }
  data_size_ += bytes;
}

void SafetensorsWriter::set_metadata(const std::string& key, const std::string& value) { metadata_[key] = value; }

void SafetensorsWriter::begin() {
  if (begun_) return;
  begun_ = true;
  nlohmann::json header = nlohmann::json::object();
  if (!metadata_.empty()) header["__metadata__"] = metadata_;
  uint64_t cursor = 0;
  for (auto& [name, e] : entries_) {  // std::map: sorted names, so data follows name order
    uint64_t bytes = 0;
    tensor_byte_size(e.shape, e.dtype, bytes);
    e.begin = cursor;
    e.end = cursor + bytes;
    cursor = e.end;
    header[name] = {
        {"dtype", std::string(dtype_name(e.dtype))}, {"shape", e.shape}, {"data_offsets", {e.begin, e.end}}};
  }
  std::string text = header.dump();
  // Pad with spaces (valid JSON whitespace) so the data region starts on an 8-byte boundary.
  while ((8 + text.size()) % 8 != 0) text.push_back(' ');
  data_start_ = 8 + text.size();

  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) throw CheckpointError(path_.string() + ": cannot create: " + std::strerror(errno));
  std::vector<uint8_t> head(data_start_);
  uint64_t n = text.size();
  for (int i = 0; i < 8; ++i) head[size_t(i)] = uint8_t(n >> (8 * i));
  std::memcpy(head.data() + 8, text.data(), text.size());
  size_t done = 0;
  while (done < head.size()) {
    const ssize_t w = ::pwrite(fd_, head.data() + done, head.size() - done, off_t(done));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) throw CheckpointError(path_.string() + ": write failed: " + std::strerror(errno));
    done += size_t(w);
  }
  // Size the file now so a reader never sees a header that promises more than the file holds
  // while tensors are still being streamed.
  if (::ftruncate(fd_, off_t(data_start_ + data_size_)) != 0) {
    throw CheckpointError(path_.string() + ": cannot size the file to " + std::to_string(data_start_ + data_size_) +
                          " bytes: " + std::strerror(errno));
  }
}

void SafetensorsWriter::write(const std::string& name, std::span<const uint8_t> bytes) {
  if (bytes.empty()) return;
  if (!begun_) begin();
  const auto it = entries_.find(name);
  if (it == entries_.end()) throw CheckpointError(path_.string() + ": tensor '" + name + "' was not declared");
  Entry& e = it->second;
  if (e.written + bytes.size() > e.end - e.begin) {
    throw CheckpointError(path_.string() + ": tensor '" + name + "': " + std::to_string(e.written + bytes.size()) +
                          " bytes written for a tensor of " + std::to_string(e.end - e.begin));
  }
  size_t done = 0;
  const uint64_t base = data_start_ + e.begin + e.written;
  while (done < bytes.size()) {
    const ssize_t w = ::pwrite(fd_, bytes.data() + done, bytes.size() - done, off_t(base + done));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0)
      throw CheckpointError(path_.string() + ": tensor '" + name + "': write failed: " + std::strerror(errno));
    done += size_t(w);
  }
  e.written += bytes.size();
}

void SafetensorsWriter::finish() {
  if (finished_) return;
  if (!begun_) begin();
  for (const auto& [name, e] : entries_) {
    if (e.written != e.end - e.begin) {
      throw CheckpointError(path_.string() + ": tensor '" + name + "': only " + std::to_string(e.written) + " of " +
                            std::to_string(e.end - e.begin) + " bytes were written");
    }
  }
  if (::close(fd_) != 0) {
    fd_ = -1;
    throw CheckpointError(path_.string() + ": close failed: " + std::strerror(errno));
  }
  fd_ = -1;
  finished_ = true;
}

std::vector<std::string> SafetensorsWriter::names() const {
  std::vector<std::string> out;
  for (const auto& [name, e] : entries_) out.push_back(name);
  return out;
}

}  // namespace moepage::ckpt
