#include "checkpoint/checkpoint.hpp"

#include <algorithm>
#include <new>
#include <optional>
#include <set>

#include "checkpoint/safetensors_header.hpp"
#include "checkpoint/shard_index.hpp"
#include "fileio/text_file.hpp"

namespace moepage::ckpt {
namespace fs = std::filesystem;

uint64_t TensorInfo::elements() const {
  uint64_t n = 1;
  for (uint64_t d : shape) n *= d;
  return n;
}

struct Checkpoint::Viewed {
  std::mutex mutex;
  // 64-byte aligned like the kernels' vector loads want; a tensor's bytes never move once read.
  struct AlignedFree {
    void operator()(uint8_t* p) const { ::operator delete[](p, std::align_val_t(64)); }
  };
  std::vector<std::unique_ptr<uint8_t[], AlignedFree>> bytes;  // by tensor index
};

Checkpoint::Checkpoint() : viewed_(std::make_unique<Viewed>()) {}
Checkpoint::Checkpoint(Checkpoint&&) noexcept = default;
Checkpoint& Checkpoint::operator=(Checkpoint&&) noexcept = default;
Checkpoint::~Checkpoint() = default;

namespace {

SafetensorsHeader read_header(const MappedFile& file) {
  const std::string label = file.path().string();
  uint8_t first8[8] = {};
  if (file.size() >= 8) file.pread_exact(0, first8);
  const uint64_t n =
      parse_header_length(std::span<const uint8_t>(first8, file.size() >= 8 ? 8 : 0), file.size(), label);
  std::vector<uint8_t> bytes(8 + n);
  file.pread_exact(0, bytes);
  return parse_safetensors_header(bytes, file.size(), label);
}

std::string read_text(const fs::path& p) {
  std::optional<std::string> text = fileio::try_read_file(p);
  if (!text) throw CheckpointError(p.string() + ": cannot open");
  return std::move(*text);
}

}  // namespace

Checkpoint Checkpoint::open(const fs::path& path) {
  Checkpoint ck;
  std::error_code ec;
  const fs::path abs = fs::absolute(path, ec);
  std::vector<std::string> file_names;
  ShardIndex index;
  bool have_index = false;

  if (fs::is_regular_file(abs)) {
    ck.dir_ = abs.parent_path();
    file_names.push_back(abs.filename().string());
  } else if (fs::is_directory(abs)) {
    ck.dir_ = abs;
    const fs::path index_path = abs / kIndexFileName;
    if (fs::exists(index_path)) {
      index = parse_shard_index(read_text(index_path), index_path.string());
      have_index = true;
      file_names = index.files;
      if (file_names.empty()) throw CheckpointError(index_path.string() + ": weight_map names no tensors");
      for (const auto& f : file_names) {
        if (!fs::is_regular_file(abs / f)) {
          const auto it = std::find_if(index.weight_map.begin(), index.weight_map.end(),
                                       [&](const auto& kv) { return kv.second == f; });
          throw CheckpointError(index_path.string() + ": names shard '" + f + "' (for tensor '" + it->first +
                                "'), which does not exist in " + abs.string());
        }
      }
    } else if (fs::is_regular_file(abs / "model.safetensors")) {
      file_names.push_back("model.safetensors");
    } else {
      for (const auto& e : fs::directory_iterator(abs)) {
        if (e.is_regular_file() && e.path().extension() == ".safetensors")
          file_names.push_back(e.path().filename().string());
      }
      std::sort(file_names.begin(), file_names.end());
    }
    if (file_names.empty()) {
      throw CheckpointError(abs.string() + ": no " + kIndexFileName + ", model.safetensors or *.safetensors file");
    }
  } else {
    throw CheckpointError(abs.string() + ": no such checkpoint folder or file");
  }
  ck.sharded_ = have_index;

  std::map<std::string, uint32_t> owner;  // tensor -> file that holds it
  for (uint32_t fi = 0; fi < file_names.size(); ++fi) {
    const fs::path p = ck.dir_ / file_names[fi];
    auto file = std::make_unique<MappedFile>(p);
    const SafetensorsHeader h = read_header(*file);
    for (const HeaderTensor& t : h.tensors) {
      const auto [it, inserted] = owner.emplace(t.name, fi);
      if (!inserted) {
        throw CheckpointError(p.string() + ": tensor '" + t.name + "' is also in " +
                              (ck.dir_ / file_names[it->second]).string() + " (a tensor must live in one shard)");
      }
      if (have_index) {
        const auto mapped = index.weight_map.find(t.name);
        if (mapped == index.weight_map.end()) {
          throw CheckpointError(p.string() + ": tensor '" + t.name + "' is not listed in " + kIndexFileName);
        }
        if (mapped->second != file_names[fi]) {
          throw CheckpointError(p.string() + ": tensor '" + t.name + "' is mapped by " + kIndexFileName + " to '" +
                                mapped->second + "'");
        }
      }
      TensorInfo info;
      info.name = t.name;
      info.dtype = t.dtype;
      info.shape = t.shape;
      info.file_index = fi;
      info.file_path = p;
      info.offset = h.data_start + t.begin;
      info.nbytes = t.end - t.begin;
      ck.tensors_.push_back(std::move(info));
    }
    ck.paths_.push_back(p);
    ck.files_.push_back(std::move(file));
  }
  if (have_index) {
    for (const auto& [tensor, file] : index.weight_map) {
      if (!owner.count(tensor)) {
        throw CheckpointError((ck.dir_ / file).string() + ": tensor '" + tensor + "' named by " + kIndexFileName +
                              " is absent from this file");
      }
    }
  }
  std::sort(ck.tensors_.begin(), ck.tensors_.end(),
            [](const TensorInfo& a, const TensorInfo& b) { return a.name < b.name; });
  for (size_t i = 0; i < ck.tensors_.size(); ++i) ck.by_name_.emplace(ck.tensors_[i].name, i);
  ck.viewed_->bytes.resize(ck.tensors_.size());
  return ck;
}

uint64_t Checkpoint::file_size(uint32_t file_index) const { return files_.at(file_index)->size(); }

const TensorInfo* Checkpoint::find(std::string_view name) const {
  const auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : &tensors_[it->second];
}

const TensorInfo& Checkpoint::at(std::string_view name) const {
  const TensorInfo* t = find(name);
  if (!t) throw CheckpointError(dir_.string() + ": missing tensor '" + std::string(name) + "'");
  return *t;
}

std::span<const uint8_t> Checkpoint::view(std::string_view name) const { return view(at(name)); }

std::span<const uint8_t> Checkpoint::view(const TensorInfo& t) const {
  const auto it = by_name_.find(t.name);
  if (it == by_name_.end()) throw CheckpointError(dir_.string() + ": missing tensor '" + t.name + "'");
  const size_t index = it->second;
  std::lock_guard lock(viewed_->mutex);
  auto& slot = viewed_->bytes[index];
  if (!slot) {
    std::unique_ptr<uint8_t[], Viewed::AlignedFree> bytes(
        static_cast<uint8_t*>(::operator new[](std::max<uint64_t>(t.nbytes, 1), std::align_val_t(64))));
    files_.at(t.file_index)->pread_exact(t.offset, {bytes.get(), t.nbytes});
    slot = std::move(bytes);
  }
  return {slot.get(), t.nbytes};
}

const uint8_t* Checkpoint::viewed_data(const TensorInfo& t) const {
  const auto it = by_name_.find(t.name);
  if (it == by_name_.end()) return nullptr;
  std::lock_guard lock(viewed_->mutex);
  return viewed_->bytes[it->second].get();
}

void Checkpoint::check_unchanged() const {
  for (const auto& f : files_) f->check_unchanged();
}

ByteRange Checkpoint::byte_range(std::string_view name) const {
  const TensorInfo& t = at(name);
  return {t.file_index, t.offset, t.nbytes};
}

void Checkpoint::read(const TensorInfo& t, std::span<uint8_t> out) const {
  if (out.size() != t.nbytes) {
    throw CheckpointError(t.file_path.string() + ": tensor '" + t.name + "': read buffer of " +
                          std::to_string(out.size()) + " bytes for " + std::to_string(t.nbytes));
  }
  files_.at(t.file_index)->pread_exact(t.offset, out);
}

}  // namespace moepage::ckpt
