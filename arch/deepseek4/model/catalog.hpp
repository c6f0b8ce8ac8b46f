// The expert catalog: where every routed expert's bytes live, so pagers read them with positional
// reads straight from the safetensors files. Parts of an expert, by index: w1, w1.scale, w3,
// w3.scale, w2, w2.scale (the scales only when the experts are quantized). Inside a slot they lie
// in the order layer 0, expert 0 stores them in the checkpoint, each on a 64-byte boundary, so an
// expert stored as one run of bytes is one run in its slot (one copy for a transport that merges
// reads that continue each other). Building it reads headers only, never expert bytes.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "checkpoint/checkpoint.hpp"
#include "deepseek4/model/config.hpp"
#include "deepseek4/model/tensor_names.hpp"
#include "moepage/pager.h"

namespace moepage::ds4 {

inline constexpr uint64_t kSlotPartAlign = 64;

struct ExpertSegment {
  uint32_t file = 0;    // index into ExpertCatalog::files()
  uint64_t offset = 0;  // absolute byte offset in the file
  uint64_t length = 0;
  Dtype dtype = Dtype::I8;
  std::vector<uint64_t> shape;  // as stored
};

class ExpertCatalog {
 public:
  // Checks that every expert of every layer has the same parts with the same dtype and shape
  // (a difference is a CheckpointError naming the file and tensor).
  static std::unique_ptr<ExpertCatalog> build(const TensorResolver& resolver, const Config& c);

  ExpertCatalog(const ExpertCatalog&) = delete;
  ExpertCatalog& operator=(const ExpertCatalog&) = delete;

  uint32_t n_layers() const { return n_layers_; }
  uint32_t n_experts() const { return n_experts_; }
  uint32_t n_parts() const { return uint32_t(part_names_.size()); }
  uint32_t top_k() const { return top_k_; }
  const std::vector<std::string>& part_names() const { return part_names_; }
  const std::vector<uint64_t>& part_offsets() const { return part_offset_; }
  const std::vector<uint64_t>& part_bytes() const { return part_bytes_; }
  // One slot: all parts, each aligned to kSlotPartAlign.
  uint64_t expert_bytes() const { return expert_bytes_; }
  // Sum of the parts' bytes as stored in the files (no alignment padding).
  uint64_t expert_file_bytes() const;
  uint32_t layers_with_experts() const;
  const std::vector<std::string>& files() const { return files_; }
  const ExpertSegment& segment(uint32_t layer, uint32_t expert, uint32_t part) const {
    return segments_[(size_t(layer) * n_experts_ + expert) * n_parts() + part];
  }
  bool hash_routed(uint32_t layer) const { return hash_routed_[layer] != 0; }

  // The ABI view; its pointers stay valid for the catalog's lifetime.
  const mp_expert_catalog& abi() const { return abi_; }

 private:
  ExpertCatalog() = default;
  void fill_abi(uint32_t d_model);

  uint32_t n_layers_ = 0, n_experts_ = 0, top_k_ = 0;
  std::vector<std::string> part_names_;
  std::vector<uint64_t> part_offset_, part_bytes_;
  uint64_t expert_bytes_ = 0;
  std::vector<std::string> files_;
  std::vector<ExpertSegment> segments_;
  std::vector<uint8_t> has_experts_, hash_routed_;
  // ABI storage
  std::vector<const char*> file_ptrs_, part_name_ptrs_;
  std::vector<mp_expert_segment> abi_segments_;
  mp_expert_catalog abi_{};
};

}  // namespace moepage::ds4
