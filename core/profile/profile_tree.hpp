// The untyped middle of profile loading: YAML files flattened to dotted keys ("pager.budget"),
// each value remembering the file, line and column it came from and the folder its relative
// paths resolve against. Inheritance and --set overrides are merges of these flat maps; the
// typed Profile is built from the result (profile_parse.cpp).
#pragma once
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <yaml-cpp/yaml.h>

namespace moepage::profile {

struct Setting {
  YAML::Node value;  // a scalar, or a sequence for generate.prompt_ids; Null removes the key
  std::filesystem::path base_dir;
  std::string where;  // "file:line:column" or "--set key=value"
};

// Keyed by dotted path; ordered so messages and option lists come out sorted.
using Settings = std::map<std::string, Setting>;

// Reads `path` and every profile its `base:` chain names, and merges them, the deepest base
// first. Errors (syntax with file:line:column, unknown keys, missing bases, cycles naming the
// files) throw ProfileError.
Settings read_profile_chain(const std::filesystem::path& path);
// The same with the first file's text given (nullptr: read it), as if read from `path`: messages
// name `path`, relative paths and `base:` resolve from its folder. The bases are read from disk.
Settings read_profile_chain_text(const std::filesystem::path& path, const std::string_view* text);

// Applies one "key.path=value" override on top of `settings`; errors start with `origin`.
void apply_override(Settings& settings, std::string_view assignment, const std::filesystem::path& base_dir,
                    const std::string& origin);

// The sections whose keys are plugin options plus `plugin` (any key allowed at parse time).
bool is_component_section(std::string_view section);

}  // namespace moepage::profile
