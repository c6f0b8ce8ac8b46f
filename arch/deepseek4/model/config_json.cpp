#include "deepseek4/model/config_json.hpp"

#include <cmath>
#include <nlohmann/json.hpp>
#include <set>

#include "checkpoint/checkpoint_error.hpp"
#include "fileio/text_file.hpp"
#include "units/enum_names.hpp"

namespace moepage::ds4 {
namespace {

using ckpt::CheckpointError;
using nlohmann::json;

constexpr uint32_t kMaxLayers = 4096;
constexpr uint32_t kMaxSinkhornIters = 1000;
constexpr uint32_t kMaxHcMult = 64;
constexpr const char* kSliding = "sliding_attention";
constexpr const char* kCsa = "compressed_sparse_attention";
constexpr const char* kHca = "heavily_compressed_attention";
constexpr units::EnumName<AttnKind> kAttnKindNames[] = {
    {AttnKind::Sliding, kSliding}, {AttnKind::CSA, kCsa}, {AttnKind::HCA, kHca}};
constexpr units::EnumName<ScoringFunc> kScoringFuncNames[] = {
    {ScoringFunc::SqrtSoftplus, "sqrtsoftplus"}, {ScoringFunc::Sigmoid, "sigmoid"}, {ScoringFunc::Softmax, "softmax"}};

std::string brief(const json& v) {
  std::string s = v.dump(-1, ' ', true, json::error_handler_t::replace);
  return s.size() > 60 ? s.substr(0, 57) + "..." : s;
}

// Reads typed keys of one JSON object; every error names the file and the key.
class Reader {
 public:
  Reader(const json& obj, const std::string& label, std::string prefix = "")
      : obj_(obj), label_(label), prefix_(std::move(prefix)) {}

  [[noreturn]] void fail(std::string_view key, const std::string& what) const {
    throw CheckpointError(label_ + ": key '" + prefix_ + std::string(key) + "': " + what);
  }
  const json* get(std::string_view key) const {
    read_.emplace(key);
    const auto it = obj_.find(key);
    return (it == obj_.end() || it->is_null()) ? nullptr : &*it;
  }
  bool has(std::string_view key) const { return get(key) != nullptr; }
  // The keys of the object never asked for through get().
  std::vector<std::string> unread_keys() const {
    std::vector<std::string> out;
    for (const auto& [key, value] : obj_.items())
      if (!read_.count(key)) out.push_back(key);
    return out;
  }

  uint64_t u64(std::string_view key, uint64_t def) const {
    const json* v = get(key);
    if (!v) return def;
    if (v->is_number_unsigned()) return v->get<uint64_t>();
    // 4096.0 is an integer too; anything with a fraction or a sign is not.
    if (v->is_number_float()) {
      const double d = v->get<double>();
      if (d >= 0 && d == std::floor(d) && d < 1.8e19) return uint64_t(d);
    }
    fail(key, "expected a non-negative integer, got " + brief(*v));
  }
  uint32_t u32(std::string_view key, uint32_t def) const {
    const uint64_t v = u64(key, def);
    if (v > UINT32_MAX) fail(key, "value " + std::to_string(v) + " is too large");
    return uint32_t(v);
  }
  double number(std::string_view key, double def) const {
    const json* v = get(key);
    if (!v) return def;
    if (!v->is_number()) fail(key, "expected a number, got " + brief(*v));
    return v->get<double>();
  }
  bool boolean(std::string_view key, bool def) const {
    const json* v = get(key);
    if (!v) return def;
    if (!v->is_boolean()) fail(key, "expected true or false, got " + brief(*v));
    return v->get<bool>();
  }
  std::string string(std::string_view key, const std::string& def) const {
    const json* v = get(key);
    if (!v) return def;
    if (!v->is_string()) fail(key, "expected a string, got " + brief(*v));
    return v->get<std::string>();
  }
  // bos/eos may be an integer or a list of integers (the first is taken).
  int32_t token_id(std::string_view key, int32_t def) const {
    const json* v = get(key);
    if (!v) return def;
    const json* x = v;
    if (v->is_array()) {
      if (v->empty()) return def;
      x = &(*v)[0];
    }
    if (!x->is_number_integer()) fail(key, "expected a token id, got " + brief(*v));
    const int64_t id = x->get<int64_t>();
    if (id < -1 || id > INT32_MAX) fail(key, "token id " + std::to_string(id) + " is out of range");
    return int32_t(id);
  }

 private:
  const json& obj_;
  const std::string& label_;
  std::string prefix_;
  mutable std::set<std::string, std::less<>> read_;
};

AttnKind attn_kind_from(const Reader& r, std::string_view key, const json& v) {
  if (v.is_string()) {
    if (const auto kind = units::value_named(kAttnKindNames, v.get_ref<const std::string&>())) return *kind;
  }
  r.fail(key, std::string("entries must be one of ") + kSliding + ", " + kCsa + ", " + kHca + "; got " + brief(v));
}

// `r` reads one rope dict; its prefix names the dict in errors ("rope_parameters.main.").
RopeParams parse_rope(const Reader& r, double default_theta, uint64_t max_positions) {
  RopeParams p;
  p.theta = r.number("rope_theta", default_theta);
  const std::string type = r.string("rope_type", r.string("type", "default"));
  if (type == "yarn") {
    p.yarn = true;
    p.factor = r.number("factor", 1.0);
    p.original_max_position = r.number("original_max_position_embeddings", double(max_positions));
    p.beta_fast = r.number("beta_fast", 32.0);
    p.beta_slow = r.number("beta_slow", 1.0);
    if (!(p.factor > 0)) r.fail("factor", "YaRN factor must be positive");
    if (!(p.original_max_position > 0)) r.fail("original_max_position_embeddings", "must be positive");
  } else if (type != "default") {
    r.fail("rope_type", "unsupported rope type \"" + type + "\" (default or yarn)");
  }
  if (!(p.theta > 0)) r.fail("rope_theta", "must be positive");
  return p;
}

// The scalar keys: sizes, routing, norms, limits and token ids, each with its default.
void read_scalars(const Reader& r, Config& c, ConfigExtras& x) {
  x.model_type = r.string("model_type", "deepseek_v4");
  if (x.model_type != "deepseek_v4") r.fail("model_type", "expected \"deepseek_v4\", got \"" + x.model_type + "\"");
  c.vocab_size = r.u32("vocab_size", c.vocab_size);
  c.hidden_size = r.u32("hidden_size", c.hidden_size);
  c.moe_intermediate_size = r.u32("moe_intermediate_size", r.u32("intermediate_size", c.moe_intermediate_size));
  c.num_hidden_layers = r.u32("num_hidden_layers", c.num_hidden_layers);
  c.num_attention_heads = r.u32("num_attention_heads", c.num_attention_heads);
  x.num_key_value_heads = r.u32("num_key_value_heads", 1);
  if (x.num_key_value_heads != 1)
    r.fail("num_key_value_heads", "DeepSeek-V4 has one shared KV head, got " + std::to_string(x.num_key_value_heads));
  c.head_dim = r.u32("head_dim", c.head_dim);
  c.q_lora_rank = r.u32("q_lora_rank", c.q_lora_rank);
  c.o_groups = r.u32("o_groups", c.o_groups);
  c.o_lora_rank = r.u32("o_lora_rank", c.o_lora_rank);
  c.n_routed_experts = r.u32("n_routed_experts", r.u32("num_local_experts", c.n_routed_experts));
  c.n_shared_experts = r.u32("n_shared_experts", c.n_shared_experts);
  c.num_experts_per_tok = r.u32("num_experts_per_tok", c.num_experts_per_tok);
  const std::string scoring = r.string("scoring_func", "sqrtsoftplus");
  if (const auto f = units::value_named(kScoringFuncNames, scoring)) c.scoring_func = *f;
  else r.fail("scoring_func", "unknown scoring function \"" + scoring + "\" (sqrtsoftplus, sigmoid or softmax)");
  c.norm_topk_prob = r.boolean("norm_topk_prob", c.norm_topk_prob);
  c.routed_scaling_factor = r.number("routed_scaling_factor", c.routed_scaling_factor);
  c.swiglu_limit = r.number("swiglu_limit", c.swiglu_limit);
  c.sliding_window = r.u32("sliding_window", c.sliding_window);
  c.hc_mult = r.u32("hc_mult", c.hc_mult);
  c.hc_sinkhorn_iters = r.u32("hc_sinkhorn_iters", c.hc_sinkhorn_iters);
  c.hc_eps = r.number("hc_eps", c.hc_eps);
  c.index_n_heads = r.u32("index_n_heads", c.index_n_heads);
  c.index_head_dim = r.u32("index_head_dim", c.index_head_dim);
  c.index_topk = r.u32("index_topk", c.index_topk);
  c.rms_norm_eps = r.number("rms_norm_eps", c.rms_norm_eps);
  c.max_position_embeddings = r.u64("max_position_embeddings", c.max_position_embeddings);
  c.bos_token_id = r.token_id("bos_token_id", c.bos_token_id);
  c.eos_token_id = r.token_id("eos_token_id", c.eos_token_id);
  c.tie_word_embeddings = r.boolean("tie_word_embeddings", c.tie_word_embeddings);
  x.num_nextn_predict_layers = r.u32("num_nextn_predict_layers", 1);
}

void read_compress_rates(const Reader& r, Config& c, const std::string& label) {
  // compress_rates (modern dict), then the legacy scalar overrides.
  c.compress_rate_csa = 4;
  c.compress_rate_hca = 128;
  if (const json* rates = r.get("compress_rates")) {
    if (!rates->is_object()) r.fail("compress_rates", "expected an object keyed by layer type, got " + brief(*rates));
    const Reader rr(*rates, label, "compress_rates.");
    c.compress_rate_csa = rr.u32(kCsa, c.compress_rate_csa);
    c.compress_rate_hca = rr.u32(kHca, c.compress_rate_hca);
  }
  c.compress_rate_csa = r.u32("compress_rate_csa", c.compress_rate_csa);
  c.compress_rate_hca = r.u32("compress_rate_hca", c.compress_rate_hca);
}

void read_layer_types(const Reader& r, Config& c) {
  const uint32_t n = c.num_hidden_layers;
  // layer_types: explicit > legacy compress_ratios (0/4/128 labels) > the V4-Pro default; cut to n.
  c.layer_types.clear();
  if (const json* lt = r.get("layer_types")) {
    if (!lt->is_array()) r.fail("layer_types", "expected a list, got " + brief(*lt));
    for (const auto& v : *lt) c.layer_types.push_back(attn_kind_from(r, "layer_types", v));
  } else if (const json* cr = r.get("compress_ratios")) {
    if (!cr->is_array()) r.fail("compress_ratios", "expected a list of per-layer ratios, got " + brief(*cr));
    for (const auto& v : *cr) {
      // HF maps the labels 0/4/128; a ratio equal to the configured CSA/HCA rate is accepted too
      // (reference-style configs write the literal ratio).
      if (!v.is_number_unsigned()) r.fail("compress_ratios", "entries must be 0, 4 or 128, got " + brief(v));
      const uint64_t ratio = v.get<uint64_t>();
      if (ratio == 0) c.layer_types.push_back(AttnKind::Sliding);
      else if (ratio == 4 || ratio == c.compress_rate_csa) c.layer_types.push_back(AttnKind::CSA);
      else if (ratio == 128 || ratio == c.compress_rate_hca) c.layer_types.push_back(AttnKind::HCA);
      else r.fail("compress_ratios", "entry " + std::to_string(ratio) + " is not 0 (sliding), 4 (CSA) or 128 (HCA)");
    }
  } else {
    for (uint32_t i = 0; i < n; ++i) {
      c.layer_types.push_back(i < 2 ? AttnKind::HCA : ((i - 2) % 2 ? AttnKind::CSA : AttnKind::HCA));
    }
  }
  if (c.layer_types.size() > n) c.layer_types.resize(n);
  if (c.layer_types.size() != n) {
    r.fail(r.has("layer_types") ? "layer_types" : "compress_ratios",
           "has " + std::to_string(c.layer_types.size()) + " entries for num_hidden_layers " + std::to_string(n));
  }
}

void read_mlp_layer_types(const Reader& r, Config& c) {
  const uint32_t n = c.num_hidden_layers;
  // mlp_layer_types: explicit > legacy num_hash_layers > 3 hash layers; cut to n.
  c.mlp_layer_types.clear();
  if (const json* mt = r.get("mlp_layer_types")) {
    if (!mt->is_array()) r.fail("mlp_layer_types", "expected a list, got " + brief(*mt));
    for (const auto& v : *mt) {
      if (v == "hash_moe") c.mlp_layer_types.push_back(MlpKind::HashMoe);
      else if (v == "moe") c.mlp_layer_types.push_back(MlpKind::Moe);
      else r.fail("mlp_layer_types", "entries must be hash_moe or moe, got " + brief(v));
    }
    if (c.mlp_layer_types.size() > n) c.mlp_layer_types.resize(n);
    if (c.mlp_layer_types.size() != n) {
      r.fail("mlp_layer_types",
             "has " + std::to_string(c.mlp_layer_types.size()) + " entries for num_hidden_layers " + std::to_string(n));
    }
  } else {
    const uint32_t hash = r.u32("num_hash_layers", 3);
    for (uint32_t i = 0; i < n; ++i) c.mlp_layer_types.push_back(i < hash ? MlpKind::HashMoe : MlpKind::Moe);
  }
}

void read_partial_rotary(const Reader& r, Config& c, ConfigExtras& x) {
  // partial_rotary_factor: explicit > legacy qk_rope_head_dim / head_dim > 64/512.
  if (r.has("partial_rotary_factor")) {
    x.partial_rotary_factor = r.number("partial_rotary_factor", 0.125);
  } else if (r.has("qk_rope_head_dim")) {
    if (c.head_dim == 0) r.fail("head_dim", "must be positive");
    x.partial_rotary_factor = double(r.u32("qk_rope_head_dim", 64)) / double(c.head_dim);
  } else {
    x.partial_rotary_factor = 64.0 / 512.0;
  }
  const double rope_dims = double(c.head_dim) * x.partial_rotary_factor;
  if (!(rope_dims >= 0) || std::fabs(rope_dims - std::round(rope_dims)) > 1e-6 || rope_dims > double(c.head_dim)) {
    r.fail(r.has("partial_rotary_factor") ? "partial_rotary_factor" : "qk_rope_head_dim",
           "head_dim x partial_rotary_factor = " + std::to_string(rope_dims) +
               " is not a whole number of dims within head_dim " + std::to_string(c.head_dim));
  }
  c.qk_rope_head_dim = uint32_t(std::lround(rope_dims));
}

void read_rope(const Reader& r, Config& c, const std::string& label) {
  // RoPE: nested rope_parameters {main, compress} > flat rope_parameters / legacy rope_scaling
  // (the YaRN dict, copied into compress only) + rope_theta (main) + compress_rope_theta.
  const double rope_theta = r.number("rope_theta", 10000.0);
  const double compress_theta = r.number("compress_rope_theta", 160000.0);
  const json* rp = r.get("rope_parameters");
  if (rp && !rp->is_object()) r.fail("rope_parameters", "expected an object, got " + brief(*rp));
  if (rp && rp->contains("main") && rp->contains("compress")) {
    for (const char* part : {"main", "compress"}) {
      if (!(*rp)[part].is_object())
        r.fail(std::string("rope_parameters.") + part, "expected an object, got " + brief((*rp)[part]));
    }
    c.rope_main =
        parse_rope(Reader((*rp)["main"], label, "rope_parameters.main."), rope_theta, c.max_position_embeddings);
    c.rope_compress = parse_rope(Reader((*rp)["compress"], label, "rope_parameters.compress."), compress_theta,
                                 c.max_position_embeddings);
  } else {
    json yarn = json::object();
    std::string yarn_key = "rope_scaling";
    if (rp) {
      yarn = *rp;
      yarn_key = "rope_parameters";
    } else if (const json* rs = r.get("rope_scaling")) {
      if (!rs->is_object()) r.fail("rope_scaling", "expected an object, got " + brief(*rs));
      yarn = *rs;
    }
    const double main_theta =
        yarn.contains("rope_theta") && yarn["rope_theta"].is_number() ? yarn["rope_theta"].get<double>() : rope_theta;
    c.rope_main = RopeParams{};
    c.rope_main.theta = main_theta;
    if (!(c.rope_main.theta > 0)) r.fail("rope_theta", "must be positive");
    yarn["rope_theta"] = compress_theta;
    c.rope_compress = parse_rope(Reader(yarn, label, yarn_key + "."), compress_theta, c.max_position_embeddings);
  }
}

}  // namespace

std::string_view attn_kind_name(AttnKind k) { return units::name_of(kAttnKindNames, k); }
std::string_view mlp_kind_name(MlpKind k) { return k == MlpKind::HashMoe ? "hash_moe" : "moe"; }
std::string_view scoring_func_name(ScoringFunc f) { return units::name_of(kScoringFuncNames, f); }

ParsedConfig parse_config_json(std::string_view text, const std::string& label) {
  const json j = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) throw CheckpointError(label + ": malformed JSON");
  if (!j.is_object()) throw CheckpointError(label + ": config must be a JSON object");
  const Reader r(j, label);
  ParsedConfig out;
  Config& c = out.config;
  read_scalars(r, c, out.extras);
  const uint32_t n = c.num_hidden_layers;
  // Bounds what the schedule vectors below may allocate; real models have tens of layers.
  if (n > kMaxLayers)
    r.fail("num_hidden_layers", std::to_string(n) + " exceeds the limit of " + std::to_string(kMaxLayers));
  read_compress_rates(r, c, label);
  read_layer_types(r, c);
  read_mlp_layer_types(r, c);
  read_partial_rotary(r, c, out.extras);
  read_rope(r, c, label);
  validate_config(c, label);
  out.ignored_keys = r.unread_keys();
  return out;
}

void validate_config(const Config& c, const std::string& label) {
  const auto fail = [&](std::string_view key, const std::string& what) {
    throw CheckpointError(label + ": key '" + std::string(key) + "': " + what);
  };
  const auto positive = [&](std::string_view key, uint64_t v) {
    if (v == 0) fail(key, "must be positive");
  };
  positive("vocab_size", c.vocab_size);
  positive("hidden_size", c.hidden_size);
  positive("num_hidden_layers", c.num_hidden_layers);
  positive("num_attention_heads", c.num_attention_heads);
  positive("head_dim", c.head_dim);
  positive("q_lora_rank", c.q_lora_rank);
  positive("o_groups", c.o_groups);
  positive("o_lora_rank", c.o_lora_rank);
  positive("moe_intermediate_size", c.moe_intermediate_size);
  positive("n_routed_experts", c.n_routed_experts);
  positive("num_experts_per_tok", c.num_experts_per_tok);
  positive("hc_mult", c.hc_mult);
  positive("sliding_window", c.sliding_window);
  if (uint64_t(c.num_attention_heads) * c.head_dim % c.o_groups != 0) {
    fail("o_groups", "num_attention_heads x head_dim (" + std::to_string(c.num_attention_heads) + " x " +
                         std::to_string(c.head_dim) + ") is not divisible by o_groups " + std::to_string(c.o_groups));
  }
  if (c.qk_rope_head_dim % 2 != 0)
    fail("qk_rope_head_dim",
         "rotated dims " + std::to_string(c.qk_rope_head_dim) + " must be even (interleaved pairs)");
  if (c.qk_rope_head_dim > c.head_dim) {
    fail("qk_rope_head_dim",
         "rotated dims " + std::to_string(c.qk_rope_head_dim) + " exceed head_dim " + std::to_string(c.head_dim));
  }
  if (c.num_experts_per_tok > c.n_routed_experts) {
    fail("num_experts_per_tok", "top-k " + std::to_string(c.num_experts_per_tok) + " exceeds n_routed_experts " +
                                    std::to_string(c.n_routed_experts));
  }
  if (c.layer_types.size() != c.num_hidden_layers) {
    fail("layer_types", "has " + std::to_string(c.layer_types.size()) + " entries for num_hidden_layers " +
                            std::to_string(c.num_hidden_layers));
  }
  if (c.mlp_layer_types.size() != c.num_hidden_layers) {
    fail("mlp_layer_types", "has " + std::to_string(c.mlp_layer_types.size()) + " entries for num_hidden_layers " +
                                std::to_string(c.num_hidden_layers));
  }
  bool any_csa = false, any_hca = false;
  for (AttnKind k : c.layer_types) {
    any_csa |= k == AttnKind::CSA;
    any_hca |= k == AttnKind::HCA;
  }
  if (any_csa) {
    positive("compress_rate_csa", c.compress_rate_csa);
    positive("index_n_heads", c.index_n_heads);
    positive("index_head_dim", c.index_head_dim);
    positive("index_topk", c.index_topk);
    if (c.qk_rope_head_dim > c.index_head_dim) {
      fail("qk_rope_head_dim", "rotated dims " + std::to_string(c.qk_rope_head_dim) + " exceed index_head_dim " +
                                   std::to_string(c.index_head_dim) + " (the indexer rotates the same trailing dims)");
    }
  }
  if (any_hca) positive("compress_rate_hca", c.compress_rate_hca);
  const auto finite_positive = [&](std::string_view key, double v) {
    if (!(v > 0) || !std::isfinite(v)) fail(key, "must be a positive finite number, got " + std::to_string(v));
  };
  finite_positive("rms_norm_eps", c.rms_norm_eps);
  // Scales the routed experts' sum: zero or negative silently removes or inverts them.
  finite_positive("routed_scaling_factor", c.routed_scaling_factor);
  // Clamps the SwiGLU inputs to [-limit, limit]: zero or negative zeroes every expert's output.
  finite_positive("swiglu_limit", c.swiglu_limit);
  if (!(c.hc_eps >= 0) || !std::isfinite(c.hc_eps)) fail("hc_eps", "must be a finite number >= 0");
  // Every token runs the Sinkhorn iterations at every mixing site; the released models use 20.
  if (c.hc_sinkhorn_iters == 0 || c.hc_sinkhorn_iters > kMaxSinkhornIters)
    fail("hc_sinkhorn_iters",
         "must be from 1 to " + std::to_string(kMaxSinkhornIters) + ", got " + std::to_string(c.hc_sinkhorn_iters));
  if (c.hc_mult > kMaxHcMult) fail("hc_mult", "must be from 1 to " + std::to_string(kMaxHcMult));
  for (const auto& [name, rope] :
       {std::pair{"rope_parameters.main", &c.rope_main}, std::pair{"rope_parameters.compress", &c.rope_compress}}) {
    if (!std::isfinite(rope->theta) || !std::isfinite(rope->factor) || !std::isfinite(rope->original_max_position) ||
        !std::isfinite(rope->beta_fast) || !std::isfinite(rope->beta_slow))
      fail(name, "holds a value that is not a finite number");
  }
  if (c.bos_token_id >= int64_t(c.vocab_size))
    fail("bos_token_id", "is outside vocab_size " + std::to_string(c.vocab_size));
  if (c.eos_token_id >= int64_t(c.vocab_size))
    fail("eos_token_id", "is outside vocab_size " + std::to_string(c.vocab_size));
}

ParsedConfig load_config_json(const std::filesystem::path& path) {
  const std::filesystem::path p = std::filesystem::is_directory(path) ? path / "config.json" : path;
  const std::optional<std::string> text = fileio::try_read_file(p);
  if (!text) throw CheckpointError(p.string() + ": cannot open");
  return parse_config_json(*text, p.string());
}

}  // namespace moepage::ds4
