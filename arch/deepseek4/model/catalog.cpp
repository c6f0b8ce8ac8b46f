#include "deepseek4/model/catalog.hpp"

#include <algorithm>

#include "checkpoint/safetensors_header.hpp"

namespace moepage::ds4 {

std::unique_ptr<ExpertCatalog> ExpertCatalog::build(const TensorResolver& resolver, const Config& c) {
  std::unique_ptr<ExpertCatalog> cat(new ExpertCatalog());
  const ckpt::Checkpoint& ck = resolver.checkpoint();
  cat->n_layers_ = c.num_hidden_layers;
  cat->n_experts_ = c.n_routed_experts;
  cat->top_k_ = c.num_experts_per_tok;
  for (const auto& f : ck.files()) cat->files_.push_back(f.string());

  // The part list comes from layer 0, expert 0: a weight part, then its scale when it has one.
  struct PartRef {
    std::string weight;  // released name suffix, e.g. "w1.weight"
    bool scale;
  };
  std::vector<PartRef> parts;
  for (const char* w : {"w1", "w3", "w2"}) {
    const std::string released = layer_prefix(0) + "ffn.experts.0." + w + ".weight";
    resolver.require(released, "the expert catalog");
    const bool has_scale = resolver.find_scale(released) != nullptr;
    parts.push_back({std::string(w) + ".weight", has_scale});
    cat->part_names_.push_back(w);
    if (has_scale) cat->part_names_.push_back(std::string(w) + ".scale");
  }
  const uint32_t n_parts = cat->n_parts();
  cat->segments_.resize(size_t(cat->n_layers_) * cat->n_experts_ * n_parts);
  cat->part_bytes_.assign(n_parts, 0);

  const ExpertSegment* first = nullptr;  // layer 0, expert 0: every other expert must match it
  for (uint32_t l = 0; l < cat->n_layers_; ++l) {
    for (uint32_t e = 0; e < cat->n_experts_; ++e) {
      uint32_t p = 0;
      const std::string prefix = layer_prefix(l) + "ffn.experts." + std::to_string(e) + ".";
      for (const PartRef& part : parts) {
        const std::string released = prefix + part.weight;
        std::vector<const ckpt::TensorInfo*> infos{&resolver.require(released, "the expert catalog")};
        if (part.scale) {
          const ckpt::TensorInfo* s = resolver.find_scale(released);
          if (!s) {
            throw ckpt::CheckpointError(infos[0]->file_path.string() + ": tensor '" + infos[0]->name +
                                        "' has no scale sidecar, unlike expert 0 of layer 0");
          }
          infos.push_back(s);
        }
        for (const ckpt::TensorInfo* t : infos) {
          ExpertSegment& seg = cat->segments_[(size_t(l) * cat->n_experts_ + e) * n_parts + p];
          seg = {t->file_index, t->offset, t->nbytes, t->dtype, t->shape};
          if (first) {
            const ExpertSegment& ref = first[p];
            if (seg.dtype != ref.dtype || seg.shape != ref.shape) {
              throw ckpt::CheckpointError(t->file_path.string() + ": tensor '" + t->name + "' is " +
                                          std::string(dtype_name(seg.dtype)) + " " + ckpt::shape_to_string(seg.shape) +
                                          " but expert 0 of layer 0 has " + std::string(dtype_name(ref.dtype)) + " " +
                                          ckpt::shape_to_string(ref.shape) + " (all experts must share one layout)");
            }
          } else {
            cat->part_bytes_[p] = seg.length;
          }
          ++p;
        }
      }
      if (!first) first = &cat->segments_[0];
    }
  }

  // A slot holds the parts in the order layer 0, expert 0 stores them (by file, then offset): an
  // expert whose parts lie back to back in its file then lies back to back in its slot too, so a
  // transport can move a miss as one copy instead of one per part. The part indices (and names)
  // keep their order; only where each part sits in the slot follows the file.
  std::vector<uint32_t> slot_order(n_parts);
  for (uint32_t p = 0; p < n_parts; ++p) slot_order[p] = p;
  if (first != nullptr)
    std::stable_sort(slot_order.begin(), slot_order.end(), [first](uint32_t a, uint32_t b) {
      const ExpertSegment &x = first[a], &y = first[b];
      return x.file != y.file ? x.file < y.file : x.offset < y.offset;
    });
  cat->part_offset_.assign(n_parts, 0);
  uint64_t cursor = 0;
  for (uint32_t p : slot_order) {
    cursor = (cursor + kSlotPartAlign - 1) / kSlotPartAlign * kSlotPartAlign;
    cat->part_offset_[p] = cursor;
    cursor += cat->part_bytes_[p];
  }
  cat->expert_bytes_ = (cursor + kSlotPartAlign - 1) / kSlotPartAlign * kSlotPartAlign;
  cat->has_experts_.assign(cat->n_layers_, 1);  // every DeepSeek-V4 layer is MoE
  for (uint32_t l = 0; l < cat->n_layers_; ++l) cat->hash_routed_.push_back(c.mlp_layer_types[l] == MlpKind::HashMoe);
  cat->fill_abi(c.hidden_size);
  return cat;
}

uint64_t ExpertCatalog::expert_file_bytes() const {
  uint64_t n = 0;
  for (uint64_t b : part_bytes_) n += b;
  return n;
}

uint32_t ExpertCatalog::layers_with_experts() const {
  uint32_t n = 0;
  for (uint8_t h : has_experts_) n += h;
  return n;
}

void ExpertCatalog::fill_abi(uint32_t d_model) {
  for (const auto& f : files_) file_ptrs_.push_back(f.c_str());
  for (const auto& p : part_names_) part_name_ptrs_.push_back(p.c_str());
  abi_segments_.reserve(segments_.size());
  for (const ExpertSegment& s : segments_) {
    mp_expert_segment a{};
    a.struct_size = sizeof(mp_expert_segment);
    a.file = s.file;
    a.offset = s.offset;
    a.length = s.length;
    abi_segments_.push_back(a);
  }
  abi_ = mp_expert_catalog{};
  abi_.struct_size = sizeof(mp_expert_catalog);
  abi_.n_layers = n_layers_;
  abi_.n_experts = n_experts_;
  abi_.n_parts = n_parts();
  abi_.top_k = top_k_;
  abi_.expert_bytes = expert_bytes_;
  abi_.part_offset = part_offset_.data();
  abi_.part_bytes = part_bytes_.data();
  abi_.part_names = part_name_ptrs_.data();
  abi_.n_files = uint32_t(files_.size());
  abi_.files = file_ptrs_.data();
  abi_.segments = abi_segments_.data();
  abi_.has_experts = has_experts_.data();
  abi_.hash_routed = hash_routed_.data();
  abi_.d_model = d_model;
}

}  // namespace moepage::ds4
