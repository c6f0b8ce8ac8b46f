#include <algorithm>
#include <cctype>
#include <set>

#include <yaml-cpp/yaml.h>

#include "ablate/spec.hpp"
#include "fileio/text_file.hpp"

namespace moepage::ablate {
namespace fs = std::filesystem;
namespace {

// Names the spec file, the line when yaml-cpp knows it, and the key.
class Reader {
 public:
  explicit Reader(fs::path source) : source_(std::move(source)) {}

  [[noreturn]] void fail(const YAML::Node& node, const std::string& key, const std::string& what) const {
    std::string where = source_.string();
    if (node.IsDefined() && node.Mark().line >= 0) where += ":" + std::to_string(node.Mark().line + 1);
    throw SpecError(where + ": " + key + ": " + what);
  }

  std::string string(const YAML::Node& node, const std::string& key) const {
    if (!node.IsScalar()) fail(node, key, "expected a string");
    return node.Scalar();
  }

  uint64_t unsigned_number(const YAML::Node& node, const std::string& key, uint64_t max) const {
    if (!node.IsScalar()) fail(node, key, "expected a whole number");
    const std::string& text = node.Scalar();
    if (text.empty() || text.size() > 19 ||
        !std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isdigit(c); })) {
      fail(node, key, "expected a whole number, got '" + text + "'");
    }
    const uint64_t value = std::stoull(text);
    if (value > max) fail(node, key, "expected at most " + std::to_string(max) + ", got " + text);
    return value;
  }

  // An existing file, relative to the spec's folder.
  fs::path existing_file(const YAML::Node& node, const std::string& key) const {
    const fs::path p = resolve(node, key, string(node, key));
    std::error_code ec;
    if (!fs::is_regular_file(p, ec)) fail(node, key, "file " + p.string() + " does not exist");
    return p;
  }

  // Relative to the spec's folder. The error_code forms: a name the file system refuses (too long,
  // a loop of links) is a spec error naming the key, not an escaping filesystem_error (fuzzing
  // found this).
  fs::path resolve(const YAML::Node& node, const std::string& key, const std::string& text) const {
    const fs::path p(text);
    std::error_code ec;
    fs::path resolved = fs::weakly_canonical(p.is_absolute() ? p : source_.parent_path() / p, ec);
    if (ec) fail(node, key, "cannot resolve the path '" + text + "': " + ec.message());
    return resolved;
  }

  void only_keys(const YAML::Node& map, const std::string& key, const std::set<std::string>& allowed) const {
    for (const auto& kv : map) {
      const std::string name = kv.first.Scalar();
      if (!allowed.count(name)) {
        std::string list;
        for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
        fail(kv.first, key.empty() ? name : key + "." + name, "unknown key (expected one of: " + list + ")");
      }
    }
  }

  const fs::path& source() const { return source_; }

 private:
  fs::path source_;
};

ModelChoice parse_model(const Reader& r, const YAML::Node& node) {
  ModelChoice m;
  if (node.IsScalar()) {
    m.path = r.resolve(node, "model", node.Scalar());
    std::error_code ec;
    if (!fs::is_directory(m.path, ec)) r.fail(node, "model", "folder " + m.path.string() + " does not exist");
    return m;
  }
  if (!node.IsMap() || !node["synth"]) r.fail(node, "model", "expected a checkpoint folder or {synth: {preset: ...}}");
  r.only_keys(node, "model", {"synth"});
  const YAML::Node s = node["synth"];
  if (!s.IsMap()) r.fail(s, "model.synth", "expected a map such as {preset: small, seed: 1}");
  r.only_keys(s, "model.synth", {"preset", "seed", "experts", "layers", "expert_dtype"});
  SynthModel synth;
  if (s["preset"]) {
    synth.preset = r.string(s["preset"], "model.synth.preset");
    if (synth.preset != "tiny" && synth.preset != "small" && synth.preset != "flash")
      r.fail(s["preset"], "model.synth.preset", "expected tiny, small or flash, got '" + synth.preset + "'");
  }
  if (s["seed"]) synth.seed = r.unsigned_number(s["seed"], "model.synth.seed", UINT64_MAX >> 1);
  if (s["experts"]) synth.experts = uint32_t(r.unsigned_number(s["experts"], "model.synth.experts", 1u << 16));
  if (s["layers"]) synth.layers = uint32_t(r.unsigned_number(s["layers"], "model.synth.layers", 1024));
  if (s["expert_dtype"]) {
    synth.expert_dtype = r.string(s["expert_dtype"], "model.synth.expert_dtype");
    if (*synth.expert_dtype != "fp4" && *synth.expert_dtype != "fp8" && *synth.expert_dtype != "bf16")
      r.fail(s["expert_dtype"], "model.synth.expert_dtype", "expected fp4, fp8 or bf16");
  }
  m.synth = synth;
  return m;
}

Arm parse_arm(const Reader& r, const YAML::Node& node, size_t index, const fs::path& base) {
  const std::string key = "arms[" + std::to_string(index) + "]";
  if (!node.IsMap()) r.fail(node, key, "expected a map with name and set and/or profile");
  r.only_keys(node, key, {"name", "set", "profile"});
  if (!node["name"]) r.fail(node, key + ".name", "missing: every arm needs a name");
  Arm arm;
  arm.name = r.string(node["name"], key + ".name");
  if (arm.name.empty()) r.fail(node["name"], key + ".name", "expected a non-empty name");
  if (!node["set"] && !node["profile"]) r.fail(node, key, "expected set: {key.path: value} and/or profile: FILE");
  arm.profile = node["profile"] ? r.existing_file(node["profile"], key + ".profile") : base;
  if (const YAML::Node sets = node["set"]) {
    if (!sets.IsMap()) r.fail(sets, key + ".set", "expected a map of key.path: value");
    for (const auto& kv : sets) {
      const std::string path = kv.first.Scalar();
      if (path.empty()) r.fail(kv.first, key + ".set", "empty key");
      if (!kv.second.IsScalar() && !kv.second.IsNull())
        r.fail(kv.second, key + ".set." + path, "expected a scalar value (as --set takes)");
      arm.sets.emplace_back(path, kv.second.IsNull() ? std::string() : kv.second.Scalar());
    }
  }
  return arm;
}

Prompt parse_prompt(const Reader& r, const YAML::Node& node, size_t index) {
  const std::string key = "prompts[" + std::to_string(index) + "]";
  Prompt p;
  p.label = "prompt " + std::to_string(index + 1);
  if (!node.IsMap() || node.size() != 1)
    r.fail(node, key, "expected exactly one of {ids: [...]}, {ids_file: F}, {text: T}");
  r.only_keys(node, key, {"ids", "ids_file", "text"});
  if (const YAML::Node ids = node["ids"]) {
    if (!ids.IsSequence() || ids.size() == 0) r.fail(ids, key + ".ids", "expected a non-empty list of token ids");
    std::vector<int32_t> out;
    for (const auto& id : ids) out.push_back(int32_t(r.unsigned_number(id, key + ".ids", INT32_MAX)));
    p.ids = std::move(out);
  } else if (const YAML::Node file = node["ids_file"]) {
    const fs::path path = r.existing_file(file, key + ".ids_file");
    p.ids = parse_id_list(fileio::try_read_file(path).value_or(""), path.string());
    p.label = path.filename().string();
  } else {
    p.text = r.string(node["text"], key + ".text");
    if (p.text->empty()) r.fail(node["text"], key + ".text", "expected non-empty text");
  }
  return p;
}

}  // namespace

std::vector<int32_t> parse_id_list(const std::string& text, const std::string& where) {
  std::vector<int32_t> ids;
  size_t i = 0;
  while (i < text.size()) {
    const unsigned char c = text[i];
    if (std::isspace(c) || c == ',') {
      ++i;
      continue;
    }
    size_t end = i;
    while (end < text.size() && std::isdigit(static_cast<unsigned char>(text[end]))) ++end;
    if (end == i || end - i > 10)
      throw SpecError(where + ": expected token ids (whole numbers), got '" + text.substr(i, 12) + "'");
    const uint64_t id = std::stoull(text.substr(i, end - i));
    if (id > INT32_MAX) throw SpecError(where + ": token id " + text.substr(i, end - i) + " is too large");
    ids.push_back(int32_t(id));
    i = end;
  }
  if (ids.empty()) throw SpecError(where + ": no token ids");
  return ids;
}

Spec parse_spec(const std::string& yaml_text, const fs::path& source) {
  Spec spec;
  spec.source = fs::absolute(source);
  const Reader r(spec.source);
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    throw SpecError(spec.source.string() + ":" + std::to_string(e.mark.line + 1) + ": not valid YAML: " + e.msg);
  }
  if (!root.IsMap()) r.fail(root, "(top level)", "expected a map with base, model, arms, ...");
  r.only_keys(root, "",
              {"base", "model", "arms", "repetitions", "warmup_tokens", "prompts", "max_tokens", "order", "seed",
               "random_adapter"});

  if (!root["base"]) r.fail(root, "base", "missing: the profile every arm starts from");
  spec.base = r.existing_file(root["base"], "base");
  if (!root["model"]) r.fail(root, "model", "missing: a checkpoint folder or {synth: {...}}");
  spec.model = parse_model(r, root["model"]);

  const YAML::Node arms = root["arms"];
  if (!arms) r.fail(root, "arms", "missing: a list of {name, set | profile}");
  if (!arms.IsSequence() || arms.size() == 0) r.fail(arms, "arms", "expected a non-empty list");
  std::set<std::string> names;
  for (size_t i = 0; i < arms.size(); ++i) {
    Arm arm = parse_arm(r, arms[i], i, spec.base);
    if (!names.insert(arm.name).second)
      r.fail(arms[i]["name"], "arms[" + std::to_string(i) + "].name", "duplicate arm name '" + arm.name + "'");
    spec.arms.push_back(std::move(arm));
  }

  if (root["repetitions"]) {
    spec.repetitions = uint32_t(r.unsigned_number(root["repetitions"], "repetitions", 1000));
    if (spec.repetitions == 0) r.fail(root["repetitions"], "repetitions", "expected at least 1");
  }
  if (root["warmup_tokens"])
    spec.warmup_tokens = uint32_t(r.unsigned_number(root["warmup_tokens"], "warmup_tokens", 1u << 20));
  if (root["max_tokens"]) {
    spec.max_tokens = uint32_t(r.unsigned_number(root["max_tokens"], "max_tokens", 1u << 20));
    if (spec.max_tokens == 0) r.fail(root["max_tokens"], "max_tokens", "expected at least 1");
  }
  if (root["seed"]) spec.seed = r.unsigned_number(root["seed"], "seed", UINT64_MAX >> 1);
  if (root["order"]) {
    const std::string order = r.string(root["order"], "order");
    if (order == "interleaved") spec.order = RunOrder::Interleaved;
    else if (order == "shuffled") spec.order = RunOrder::Shuffled;
    else r.fail(root["order"], "order", "expected interleaved or shuffled, got '" + order + "'");
  }

  if (const YAML::Node a = root["random_adapter"]) {
    if (!a.IsMap()) r.fail(a, "random_adapter", "expected a map such as {rank: 16, seed: 1}");
    r.only_keys(a, "random_adapter", {"rank", "seed"});
    RandomAdapter adapter;
    if (a["rank"]) adapter.rank = uint32_t(r.unsigned_number(a["rank"], "random_adapter.rank", 1u << 16));
    if (adapter.rank == 0) r.fail(a["rank"], "random_adapter.rank", "expected at least 1");
    if (a["seed"]) adapter.seed = r.unsigned_number(a["seed"], "random_adapter.seed", UINT64_MAX >> 1);
    spec.random_adapter = adapter;
  }

  const YAML::Node prompts = root["prompts"];
  if (!prompts) r.fail(root, "prompts", "missing: a list of {ids: [...]}, {ids_file: F} or {text: T}");
  if (!prompts.IsSequence() || prompts.size() == 0) r.fail(prompts, "prompts", "expected a non-empty list");
  for (size_t i = 0; i < prompts.size(); ++i) spec.prompts.push_back(parse_prompt(r, prompts[i], i));
  return spec;
}

Spec load_spec(const fs::path& path) {
  const std::optional<std::string> text = fileio::try_read_file(path);
  if (!text) throw SpecError(path.string() + ": cannot open the ablation spec");
  return parse_spec(*text, path);
}

}  // namespace moepage::ablate
