#include "deepseek4/model/inspect.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>
#include <sstream>
#include <utility>

#include "checkpoint/checkpoint.hpp"
#include "checkpoint/safetensors_header.hpp"
#include "deepseek4/model/catalog.hpp"
#include "deepseek4/model/config_json.hpp"
#include "deepseek4/model/tensor_names.hpp"
#include "units/byte_size.hpp"

namespace moepage::ds4 {
namespace fs = std::filesystem;
using units::format_bytes;
using units::group_digits;
namespace {

std::string pad(std::string s, size_t w) {
  if (s.size() < w) s.append(w - s.size(), ' ');
  return s;
}

// "layers.3.ffn.experts.17.w1.weight" -> "layers.3.ffn.experts.{*}.w1.weight"; false if not an expert.
bool fold_expert_name(const std::string& name, std::string& folded) {
  const std::string key = ".ffn.experts.";
  const auto pos = name.find(key);
  if (pos == std::string::npos) return false;
  const size_t b = pos + key.size();
  size_t e = b;
  while (e < name.size() && std::isdigit(static_cast<unsigned char>(name[e]))) ++e;
  if (e == b) return false;
  folded = name.substr(0, b) + "{*}" + name.substr(e);
  return true;
}

std::string schedule_text(const Config& c) {
  std::ostringstream o;
  o << "layer schedule\n  layer  attention                      ratio  routing\n";
  for (uint32_t l = 0; l < c.num_hidden_layers; ++l) {
    const uint32_t r = c.compress_rate(l);
    o << "  " << pad(std::to_string(l), 7) << pad(std::string(attn_kind_name(c.layer_types[l])), 31)
      << pad(r ? std::to_string(r) : "-", 7) << mlp_kind_name(c.mlp_layer_types[l]) << "\n";
  }
  return o.str();
}

}  // namespace

namespace {

// The header: files, spelling and the geometry config.json gave.
void write_model_summary(std::ostringstream& o, const ckpt::Checkpoint& ck, const TensorResolver& resolver,
                         const Config& c) {
  o << "checkpoint  " << ck.dir().string() << "\n";
  o << "files       " << ck.files().size() << (ck.sharded() ? " (sharded, with index)" : "") << ", "
    << (resolver.spelling() == Spelling::Released ? "released" : "save_pretrained") << " tensor names\n";
  o << "model       hidden " << c.hidden_size << ", " << c.num_hidden_layers << " layers, vocab " << c.vocab_size
    << (c.tie_word_embeddings ? " (tied head)" : "") << "\n";
  o << "attention   " << c.num_attention_heads << " heads x " << c.head_dim << " (rope " << c.qk_rope_head_dim
    << "), q_lora " << c.q_lora_rank << ", o_groups " << c.o_groups << " x " << c.o_lora_rank << ", sliding window "
    << c.sliding_window << "\n";
  o << "compress    CSA ratio " << c.compress_rate_csa << " (indexer " << c.index_n_heads << " heads x "
    << c.index_head_dim << ", top " << c.index_topk << "), HCA ratio " << c.compress_rate_hca << "\n";
  o << "moe         " << c.n_routed_experts << " experts x " << c.moe_intermediate_size << ", top-"
    << c.num_experts_per_tok << ", " << scoring_func_name(c.scoring_func) << ", routed scale "
    << c.routed_scaling_factor << ", " << c.n_shared_experts << " shared\n";
  o << "mhc         hc_mult " << c.hc_mult << ", sinkhorn " << c.hc_sinkhorn_iters << " iterations\n";
  char rope[160];
  std::snprintf(rope, sizeof rope, "rope        main theta %g; compress theta %g%s", c.rope_main.theta,
                c.rope_compress.theta, c.rope_compress.yarn ? " + YaRN" : "");
  o << rope;
  if (c.rope_compress.yarn) {
    std::snprintf(rope, sizeof rope, " (factor %g, original %g, beta %g/%g)", c.rope_compress.factor,
                  c.rope_compress.original_max_position, c.rope_compress.beta_fast, c.rope_compress.beta_slow);
    o << rope;
  }
  o << "\n\n" << schedule_text(c) << "\n";
}

// Tensor table: dense tensors one per line, expert tensors folded per (layer, part). Returns the
// bytes of the dense and of the expert tensors.
std::pair<uint64_t, uint64_t> write_tensor_table(std::ostringstream& o, const ckpt::Checkpoint& ck) {
  struct Row {
    std::string dtype, shape, file;
    uint64_t bytes = 0, count = 0;
  };
  std::map<std::string, Row> dense_rows, expert_rows;
  uint64_t dense_bytes = 0, expert_bytes = 0;
  for (const auto& t : ck.tensors()) {
    std::string folded;
    const bool expert = fold_expert_name(t.name, folded);
    Row& r = expert ? expert_rows[folded] : dense_rows[t.name];
    r.dtype = std::string(dtype_name(t.dtype));
    r.shape = ckpt::shape_to_string(t.shape);
    r.file = t.file_path.filename().string();
    r.bytes = t.nbytes;
    ++r.count;
    (expert ? expert_bytes : dense_bytes) += t.nbytes;
  }
  size_t wname = 4;
  for (const auto& [n, r] : dense_rows) wname = std::max(wname, n.size());
  for (const auto& [n, r] : expert_rows) wname = std::max(wname, n.size());
  wname += 2;
  o << "tensors (" << ck.tensors().size() << "; routed experts folded as {*})\n";
  o << "  " << pad("name", wname) << pad("dtype", 9) << pad("shape", 18) << pad("bytes", 22) << "file\n";
  const auto emit = [&](const std::string& n, const Row& r) {
    const std::string bytes =
        r.count > 1 ? std::to_string(r.count) + " x " + group_digits(r.bytes) : group_digits(r.bytes);
    o << "  " << pad(n, wname) << pad(r.dtype, 9) << pad(r.shape, 18) << pad(bytes, 22) << r.file << "\n";
  };
  for (const auto& [n, r] : dense_rows) emit(n, r);
  for (const auto& [n, r] : expert_rows) emit(n, r);
  return {dense_bytes, expert_bytes};
}

void write_sizes(std::ostringstream& o, const ckpt::Checkpoint& ck, const ExpertCatalog& catalog, uint64_t dense_bytes,
                 uint64_t expert_bytes) {
  uint64_t file_bytes = 0;
  for (uint32_t f = 0; f < ck.files().size(); ++f) file_bytes += ck.file_size(f);
  const uint64_t per_expert = catalog.expert_file_bytes();
  const uint32_t paged_layers = catalog.layers_with_experts();
  o << "\nsizes\n";
  o << "  dense bytes        " << group_digits(dense_bytes) << " (" << format_bytes(dense_bytes) << ")\n";
  o << "  expert bytes       " << group_digits(expert_bytes) << " (" << format_bytes(expert_bytes)
    << ") = " << paged_layers << " layers x " << catalog.n_experts() << " experts x " << group_digits(per_expert)
    << "\n";
  o << "  bytes per expert   " << group_digits(per_expert) << " (" << format_bytes(per_expert) << "): ";
  for (uint32_t p = 0; p < catalog.n_parts(); ++p) {
    o << (p ? " + " : "") << catalog.part_names()[p] << " " << group_digits(catalog.part_bytes()[p]);
  }
  o << "\n  slot bytes         " << group_digits(catalog.expert_bytes()) << " (parts aligned to " << kSlotPartAlign
    << " bytes)\n";
  const uint64_t headers = file_bytes - dense_bytes - expert_bytes;
  o << "  files on disk      " << group_digits(file_bytes) << " (" << format_bytes(file_bytes) << ") = tensors + "
    << group_digits(headers) << " header bytes"
    << (expert_bytes == uint64_t(paged_layers) * catalog.n_experts() * per_expert
            ? ", consistent\n"
            : ", INCONSISTENT with the catalog\n");
}

// What a pager budget buys on this checkpoint.
void write_budget(std::ostringstream& o, const ExpertCatalog& catalog, uint64_t budget) {
  const uint32_t paged_layers = catalog.layers_with_experts();
  const uint64_t per_layer = uint64_t(paged_layers) * catalog.expert_bytes();
  const uint64_t slots = per_layer ? std::min<uint64_t>(budget / per_layer, catalog.n_experts()) : 0;
  o << "\nbudget " << format_bytes(budget) << " (" << group_digits(budget) << " bytes)\n";
  o << "  slots per layer    " << slots << " of " << catalog.n_experts() << " (budget / (" << paged_layers
    << " layers x " << group_digits(catalog.expert_bytes()) << "))\n";
  if (slots >= catalog.n_experts()) {
    o << "  every expert fits: one slot per expert, nothing evicted; the resident pager loads them up front ("
      << format_bytes(per_layer * catalog.n_experts()) << " of experts)\n";
  } else if (slots < catalog.top_k()) {
    o << "  below top-k: " << slots << " slots cannot hold the " << catalog.top_k()
      << " experts a token uses; the minimum budget is " << group_digits(per_layer * catalog.top_k()) << " bytes ("
      << format_bytes(per_layer * catalog.top_k()) << ")\n";
  } else {
    o << "  " << format_bytes(slots * per_layer) << " of expert slots; " << catalog.n_experts() - slots
      << " experts per layer stay on disk\n";
  }
}

}  // namespace

std::string inspect_report(const fs::path& dir, std::optional<uint64_t> budget) {
  const ParsedConfig parsed = load_config_json(dir);
  const Config& c = parsed.config;
  const ckpt::Checkpoint ck = ckpt::Checkpoint::open(dir);
  const TensorResolver resolver(ck);
  resolver.check_required(c);
  const auto catalog = ExpertCatalog::build(resolver, c);

  std::ostringstream o;
  write_model_summary(o, ck, resolver, c);
  const auto [dense_bytes, expert_bytes] = write_tensor_table(o, ck);
  write_sizes(o, ck, *catalog, dense_bytes, expert_bytes);
  if (budget) write_budget(o, *catalog, *budget);
  return o.str();
}

}  // namespace moepage::ds4
