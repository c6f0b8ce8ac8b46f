#include "profile/profile_tree.hpp"

#include <algorithm>
#include <array>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "profile/profile.hpp"

namespace moepage::profile {
namespace fs = std::filesystem;
namespace {

constexpr std::array<std::string_view, 9> kTopLevel{"base",      "model",    "device", "arch",    "pager",
                                                    "transport", "generate", "log",    "parallel"};
constexpr std::array<std::string_view, 9> kGenerateKeys{"prompt", "prompt_ids", "max_tokens", "temperature",    "top_k",
                                                        "top_p",  "seed",       "ignore_eos", "warmup_prefills"};
constexpr std::array<std::string_view, 1> kLogKeys{"level"};
constexpr std::array<std::string_view, 5> kParallelKeys{"ranks", "partition", "partition_table", "collective",
                                                        "collective_library"};
// Settings that exclude each other: setting one drops the other inherited from a base.
constexpr std::array<std::pair<std::string_view, std::string_view>, 1> kAlternatives{
    {{"generate.prompt", "generate.prompt_ids"}}};

template <size_t N>
std::string join(const std::array<std::string_view, N>& words) {
  return fmt::format("{}", fmt::join(words, ", "));
}

template <size_t N>
bool contains(const std::array<std::string_view, N>& words, std::string_view word) {
  return std::find(words.begin(), words.end(), word) != words.end();
}

bool is_scalar_section(std::string_view key) { return key == "model" || key == "device"; }

// Why `dotted` is not a key a profile can hold, or nullopt when it is.
std::optional<std::string> key_problem(std::string_view dotted) {
  const size_t dot = dotted.find('.');
  const std::string_view top = dotted.substr(0, dot);
  const std::string_view rest = dot == std::string_view::npos ? std::string_view{} : dotted.substr(dot + 1);
  if (!contains(kTopLevel, top)) {
    return fmt::format("unknown key '{}' (expected one of: {})", top, join(kTopLevel));
  }
  if (is_scalar_section(top) || top == "base") {
    if (dot != std::string_view::npos) return fmt::format("'{}' holds a single value, it has no '{}'", top, rest);
    return std::nullopt;
  }
  if (dot == std::string_view::npos || rest.empty()) {
    return fmt::format("'{}' is a section; name one of its keys, like {}.{}", top, top,
                       top == "generate"   ? "max_tokens"
                       : top == "log"      ? "level"
                       : top == "parallel" ? "ranks"
                                           : "plugin");
  }
  if (rest.find('.') != std::string_view::npos) {
    return fmt::format("'{}' is nested too deeply: {} takes single values", dotted, top);
  }
  if (top == "generate" && !contains(kGenerateKeys, rest)) {
    return fmt::format("unknown key 'generate.{}' (expected one of: {})", rest, join(kGenerateKeys));
  }
  if (top == "log" && !contains(kLogKeys, rest)) {
    return fmt::format("unknown key 'log.{}' (expected one of: {})", rest, join(kLogKeys));
  }
  if (top == "parallel" && !contains(kParallelKeys, rest)) {
    return fmt::format("unknown key 'parallel.{}' (expected one of: {})", rest, join(kParallelKeys));
  }
  return std::nullopt;
}

std::string where_of(const std::string& file, const YAML::Mark& mark) {
  if (mark.is_null()) return file;
  return fmt::format("{}:{}:{}", file, mark.line + 1, mark.column + 1);
}

// A value must be one scalar (or Null to remove the key); prompt_ids may be a sequence of scalars.
void check_value_shape(const std::string& key, const YAML::Node& value, const std::string& where) {
  if (value.IsNull() || value.IsScalar()) return;
  if (value.IsSequence() && key == "generate.prompt_ids") {
    for (const auto& item : value) {
      if (!item.IsScalar()) {
        throw ProfileError(fmt::format("{}: {}: expected a list of token ids", where, key));
      }
    }
    return;
  }
  throw ProfileError(
      fmt::format("{}: {}: expected a single value, got a {}", where, key, value.IsMap() ? "map" : "list"));
}

struct Layer {
  std::vector<std::pair<std::string, Setting>> entries;  // in file order
};

// Merges one layer (a file or an override) into `settings`.
void merge_layer(Settings& settings, const Layer& layer) {
  std::set<std::string> keys;
  for (const auto& [key, setting] : layer.entries) keys.insert(key);

  // A layer that picks a different plugin for a section starts that section afresh: options
  // inherited from the base belonged to the other plugin and would only be "unknown key" errors.
  for (const auto& [key, setting] : layer.entries) {
    const size_t dot = key.find('.');
    if (dot == std::string::npos || key.substr(dot + 1) != "plugin") continue;
    const std::string section = key.substr(0, dot);
    if (!is_component_section(section)) continue;
    auto current = settings.find(key);
    // Options set before any plugin was named stay: they were meant for whichever comes.
    if (current == settings.end()) continue;
    if (setting.value.IsScalar() && current->second.value.Scalar() == setting.value.Scalar()) continue;
    std::erase_if(settings, [&](const auto& entry) { return entry.first.rfind(section + ".", 0) == 0; });
  }

  for (const auto& alternative : kAlternatives) {
    // Named copies: clang before 16 cannot capture structured bindings in the lambda below.
    const std::string_view first = alternative.first;
    const std::string_view second = alternative.second;
    const bool has_first = keys.count(std::string(first)) > 0;
    const bool has_second = keys.count(std::string(second)) > 0;
    if (has_first && has_second) {
      const auto it = std::find_if(layer.entries.begin(), layer.entries.end(),
                                   [&](const auto& entry) { return entry.first == second; });
      throw ProfileError(fmt::format("{}: set either {} or {}, not both", it->second.where, first, second));
    }
    if (has_first) settings.erase(std::string(second));
    if (has_second) settings.erase(std::string(first));
  }

  for (const auto& [key, setting] : layer.entries) {
    // Erase, then copy-construct: assigning a YAML::Node would rewrite the node it referred to
    // (yaml-cpp's assignment is by reference), reaching into the base's tree.
    settings.erase(key);
    if (!setting.value.IsNull()) settings.emplace(key, setting);
  }
}

YAML::Node load_yaml_file(const fs::path& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) {
    throw ProfileError(fmt::format("cannot read profile '{}': {}", path.string(),
                                   fs::exists(path, ec) ? "not a regular file" : "no such file"));
  }
  try {
    return YAML::LoadFile(path.string());
  } catch (const YAML::BadFile&) {
    throw ProfileError(fmt::format("cannot read profile '{}': the file could not be opened", path.string()));
  } catch (const YAML::Exception& e) {
    throw ProfileError(fmt::format("{}: YAML syntax error: {}", where_of(path.string(), e.mark), e.msg));
  }
}

// One file's settings (not its base) and the base it names, if any.
struct FileContents {
  Layer layer;
  std::optional<std::pair<std::string, std::string>> base;  // (as written, where)
};

YAML::Node load_yaml_text(std::string_view text, const fs::path& path) {
  try {
    return YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    throw ProfileError(fmt::format("{}: YAML syntax error: {}", where_of(path.string(), e.mark), e.msg));
  }
}

// `root` is the parsed text of the file at `path` (its name shows in messages; its folder anchors
// relative paths).
FileContents read_one_file(const fs::path& path, const YAML::Node& root) {
  const std::string file = path.string();
  FileContents contents;
  if (root.IsNull()) return contents;  // an empty profile is fine: it inherits or defaults everything
  if (!root.IsMap()) {
    throw ProfileError(fmt::format("{}: a profile must be a map of keys (model, pager, ...), got a {}",
                                   where_of(file, root.Mark()), root.IsSequence() ? "list" : "single value"));
  }
  const fs::path base_dir = path.parent_path();
  std::set<std::string> seen;
  auto add = [&](const std::string& key, const YAML::Node& key_node, const YAML::Node& value) {
    if (!seen.insert(key).second) {
      throw ProfileError(fmt::format("{}: duplicate key '{}'", where_of(file, key_node.Mark()), key));
    }
    if (auto problem = key_problem(key)) {
      throw ProfileError(fmt::format("{}: {}", where_of(file, key_node.Mark()), *problem));
    }
    const std::string where = where_of(file, value.Mark());
    check_value_shape(key, value, where);
    contents.layer.entries.push_back({key, Setting{value, base_dir, where}});
  };

  for (const auto& top : root) {
    if (!top.first.IsScalar()) {
      throw ProfileError(fmt::format("{}: keys must be plain words", where_of(file, top.first.Mark())));
    }
    const std::string key = top.first.Scalar();
    const YAML::Node& value = top.second;
    if (key == "base") {
      if (!value.IsScalar() || value.Scalar().empty()) {
        throw ProfileError(fmt::format("{}: base: expected the path of another profile", where_of(file, value.Mark())));
      }
      if (contents.base) {
        throw ProfileError(fmt::format("{}: duplicate key 'base'", where_of(file, top.first.Mark())));
      }
      contents.base = {value.Scalar(), where_of(file, value.Mark())};
      continue;
    }
    if (auto problem = key_problem(key); problem && !contains(kTopLevel, key)) {
      throw ProfileError(fmt::format("{}: {}", where_of(file, top.first.Mark()), *problem));
    }
    if (is_scalar_section(key)) {
      add(key, top.first, value);
      continue;
    }
    // `arch: NAME` is short for `arch: {plugin: NAME}`; the map form also sets the arch's options.
    if (key == "arch" && (value.IsScalar() || value.IsNull())) {
      add("arch.plugin", top.first, value);
      continue;
    }
    // A section: a map of keys, or empty.
    if (!seen.insert(key).second) {
      throw ProfileError(fmt::format("{}: duplicate key '{}'", where_of(file, top.first.Mark()), key));
    }
    if (value.IsNull()) continue;
    if (!value.IsMap()) {
      throw ProfileError(fmt::format("{}: {}: expected a map of keys, got a {}", where_of(file, value.Mark()), key,
                                     value.IsSequence() ? "list" : "single value"));
    }
    for (const auto& inner : value) {
      if (!inner.first.IsScalar()) {
        throw ProfileError(fmt::format("{}: keys must be plain words", where_of(file, inner.first.Mark())));
      }
      add(key + "." + inner.first.Scalar(), inner.first, inner.second);
    }
  }
  return contents;
}

// `text`: the first file's contents when the caller already holds them (nullptr: read `path`).
void read_chain(const fs::path& path, std::vector<fs::path>& chain, std::vector<std::string>& shown,
                std::vector<Layer>& layers, const std::string_view* text = nullptr) {
  const fs::path canonical = fs::weakly_canonical(path);
  if (std::find(chain.begin(), chain.end(), canonical) != chain.end()) {
    shown.push_back(path.string());
    throw ProfileError(fmt::format("profile inheritance cycle: {}", fmt::join(shown, " -> ")));
  }
  chain.push_back(canonical);
  shown.push_back(path.string());
  FileContents contents = read_one_file(path, text ? load_yaml_text(*text, path) : load_yaml_file(path));
  if (contents.base) {
    const fs::path base_path = (path.parent_path() / contents.base->first).lexically_normal();
    std::error_code ec;
    if (!fs::exists(base_path, ec)) {
      throw ProfileError(fmt::format("{}: base profile '{}' not found (looked for {})", contents.base->second,
                                     contents.base->first, base_path.string()));
    }
    read_chain(base_path, chain, shown, layers);
  }
  layers.push_back(std::move(contents.layer));
}

}  // namespace

bool is_component_section(std::string_view section) {
  return section == "pager" || section == "transport" || section == "arch";
}

Settings read_profile_chain(const fs::path& path) { return read_profile_chain_text(path, nullptr); }

Settings read_profile_chain_text(const fs::path& path, const std::string_view* text) {
  std::vector<fs::path> chain;
  std::vector<std::string> shown;
  std::vector<Layer> layers;  // deepest base first
  read_chain(path, chain, shown, layers, text);
  Settings settings;
  for (const Layer& layer : layers) merge_layer(settings, layer);
  return settings;
}

void apply_override(Settings& settings, std::string_view assignment, const fs::path& base_dir,
                    const std::string& origin) {
  const std::string& where = origin;
  const size_t eq = assignment.find('=');
  if (eq == std::string_view::npos || eq == 0) {
    throw ProfileError(fmt::format("{}: expected key.path=value, like pager.budget=8GiB", where));
  }
  std::string key(assignment.substr(0, eq));
  if (key == "arch") key = "arch.plugin";  // --set arch=NAME, as `arch: NAME` in a file
  if (key == "base") throw ProfileError(fmt::format("{}: base can only be set inside a profile file", where));
  if (auto problem = key_problem(key)) throw ProfileError(fmt::format("{}: {}", where, *problem));
  YAML::Node value;
  try {
    value = YAML::Load(std::string(assignment.substr(eq + 1)));
  } catch (const YAML::Exception& e) {
    throw ProfileError(fmt::format("{}: the value is not valid YAML: {}", where, e.msg));
  }
  check_value_shape(key, value, where);
  Layer layer;
  layer.entries.push_back({key, Setting{value, base_dir, where}});
  merge_layer(settings, layer);
}

}  // namespace moepage::profile
