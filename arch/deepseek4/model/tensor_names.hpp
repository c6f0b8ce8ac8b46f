// DeepSeek-V4 tensor names. Specs are listed in the released spelling (`layers.L.attn.wq_a.weight`,
// `embed.weight`, `hc_head_fn`, ...; docs/deepseek-v4.md §4.1); the resolver maps each
// to whichever spelling a checkpoint uses — released, or the `model.`-prefixed one that
// transformers' save_pretrained writes (§4.3: `model.embed_tokens.weight`, `model.hc_head.hc_fn`,
// `model.layers.L.attn.norm.weight` for the KV norm, `head.weight` or `lm_head.weight`).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "checkpoint/checkpoint.hpp"
#include "deepseek4/model/config.hpp"

namespace moepage::ds4 {

enum class Spelling : uint8_t { Released, SavePretrained };

// How the release stores a tensor, which decides its dtype when synthesizing and what the
// resolver checks: Projection = FP8 + 128x128 `.scale` in the release (BF16 allowed), Expert =
// routed expert weight (FP4/FP8/BF16), the rest are stored as named.
enum class TensorRole : uint8_t { Projection, Bf16, F32, I64, Expert };

struct TensorSpec {
  std::string name;             // released spelling
  std::vector<uint64_t> shape;  // logical shape ([out, in] for weights)
  TensorRole role;
};

std::string layer_prefix(uint32_t layer);  // "layers.L."
std::vector<TensorSpec> global_tensor_specs(const Config& c);
// Dense tensors of one layer (everything but the routed experts).
std::vector<TensorSpec> layer_dense_specs(const Config& c, uint32_t layer);
// The three weights of one routed expert: w1 [I, D], w3 [I, D], w2 [D, I].
std::vector<TensorSpec> expert_specs(const Config& c, uint32_t layer, uint32_t expert);

// The name a released-spelling name has in `spelling`; alternatives follow the preferred one.
std::vector<std::string> spelling_candidates(std::string_view released, Spelling spelling);
std::string spell(std::string_view released, Spelling spelling);

class TensorResolver {
 public:
  // Detects the spelling: `embed.weight` -> released, `model.embed_tokens.weight` or any
  // `model.layers.` tensor -> save_pretrained.
  explicit TensorResolver(const ckpt::Checkpoint& ck);
  TensorResolver(const ckpt::Checkpoint& ck, Spelling spelling) : ck_(&ck), spelling_(spelling) {}

  Spelling spelling() const { return spelling_; }
  const ckpt::Checkpoint& checkpoint() const { return *ck_; }
  const ckpt::TensorInfo* find(std::string_view released) const;
  // Missing -> CheckpointError "<dir>: missing tensor '<spelled name>' required by ...".
  const ckpt::TensorInfo& require(std::string_view released, std::string_view why = "the configured geometry") const;
  // The scale sidecar of a weight (released name of the weight), or nullptr.
  const ckpt::TensorInfo* find_scale(std::string_view released_weight) const;

  // Every tensor the config needs is present with a stored shape and dtype that fit its role;
  // the first problem is a CheckpointError naming the file (or folder) and the tensor.
  void check_required(const Config& c) const;

 private:
  void check_spec(const TensorSpec& spec) const;
  const ckpt::Checkpoint* ck_;
  Spelling spelling_ = Spelling::Released;
};

}  // namespace moepage::ds4
