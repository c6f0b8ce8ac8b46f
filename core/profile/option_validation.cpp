#include "profile/option_validation.hpp"

#include <algorithm>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "profile/scalars.hpp"
#include "units/byte_size.hpp"

namespace moepage::profile {
namespace fs = std::filesystem;
using units::kSizeExpectation;
using units::parse_size;
namespace {

std::vector<std::string_view> split_choices(const char* choices) {
  std::vector<std::string_view> out;
  if (choices == nullptr) return out;
  std::string_view rest(choices);
  while (!rest.empty()) {
    const size_t bar = rest.find('|');
    out.push_back(rest.substr(0, bar));
    if (bar == std::string_view::npos) break;
    rest.remove_prefix(bar + 1);
  }
  return out;
}

std::string expectation(const mp_option_def& def) {
  switch (def.type) {
    case MP_OPT_BOOL: return "a bool (true or false)";
    case MP_OPT_INT: return "an integer";
    case MP_OPT_FLOAT: return "a number";
    case MP_OPT_STRING: return "a string";
    case MP_OPT_SIZE: return std::string(kSizeExpectation);
    case MP_OPT_SIZE_OR_AUTO: return fmt::format("'auto' or {}", kSizeExpectation);
    case MP_OPT_PATH: return "a path";
    case MP_OPT_ENUM: return fmt::format("one of {}", def.choices ? def.choices : "");
    default: return fmt::format("a value of unknown type {}", def.type);
  }
}

// A parsed integer or byte count, written back in decimal; false when it did not parse.
template <class Number>
bool store_number(const std::optional<Number>& value, std::string& out) {
  if (!value) return false;
  out = std::to_string(*value);
  return true;
}

}  // namespace

void ResolvedOptions::add(std::string name, std::string value) {
  names_.push_back(std::move(name));
  values_.push_back(std::move(value));
}

const std::string* ResolvedOptions::find(std::string_view name) const {
  for (size_t i = 0; i < names_.size(); ++i) {
    if (names_[i] == name) return &values_[i];
  }
  return nullptr;
}

const mp_options* ResolvedOptions::c_options() {
  // Rebuilt on each call so a moved-from-then-moved-to object never hands out stale pointers.
  c_values_.clear();
  for (size_t i = 0; i < names_.size(); ++i) {
    c_values_.push_back(mp_option_value{sizeof(mp_option_value), names_[i].c_str(), values_[i].c_str()});
  }
  c_options_ = mp_options{sizeof(mp_options), static_cast<uint32_t>(c_values_.size()), c_values_.data()};
  return &c_options_;
}

std::string option_type_name(const mp_option_def& def) {
  switch (def.type) {
    case MP_OPT_BOOL: return "bool";
    case MP_OPT_INT: return "int";
    case MP_OPT_FLOAT: return "float";
    case MP_OPT_STRING: return "string";
    case MP_OPT_SIZE: return "size";
    case MP_OPT_SIZE_OR_AUTO: return "size|auto";
    case MP_OPT_PATH: return "path";
    case MP_OPT_ENUM: return fmt::format("enum({})", def.choices ? def.choices : "");
    default: return fmt::format("unknown-type-{}", def.type);
  }
}

bool normalise_option_value(const mp_option_def& def, std::string_view text, const fs::path& base_dir,
                            std::string& out) {
  switch (def.type) {
    case MP_OPT_BOOL: {
      auto value = parse_bool(text);
      if (!value) return false;
      out = *value ? "true" : "false";
      return true;
    }
    case MP_OPT_INT: return store_number(parse_int(text), out);
    case MP_OPT_FLOAT: {
      if (!parse_float(text)) return false;
      out = std::string(text);
      return true;
    }
    case MP_OPT_STRING: out = std::string(text); return true;
    case MP_OPT_SIZE_OR_AUTO:
      if (text == "auto") {
        out = "auto";
        return true;
      }
      [[fallthrough]];
    case MP_OPT_SIZE: return store_number(parse_size(text), out);
    case MP_OPT_PATH: {
      if (text.empty()) {
        out.clear();  // an optional path left unset
        return true;
      }
      fs::path path{std::string(text)};
      if (path.is_relative()) path = base_dir / path;
      out = fs::absolute(path).lexically_normal().string();
      return true;
    }
    case MP_OPT_ENUM: {
      const auto choices = split_choices(def.choices);
      if (std::find(choices.begin(), choices.end(), text) == choices.end()) return false;
      out = std::string(text);
      return true;
    }
    default: return false;
  }
}

ResolvedOptions validate_options(const ComponentSpec& spec, std::span<const mp_option_def> table) {
  const std::string who = fmt::format("{} plugin '{}'", spec.section, spec.plugin);
  auto def_named = [&](std::string_view name) -> const mp_option_def* {
    for (const mp_option_def& def : table) {
      if (def.name != nullptr && name == def.name) return &def;
    }
    return nullptr;
  };

  for (const OptionSetting& setting : spec.options) {
    if (def_named(setting.name) != nullptr) continue;
    std::vector<std::string_view> valid;
    for (const mp_option_def& def : table) {
      if (def.name != nullptr) valid.push_back(def.name);
    }
    const std::string valid_text =
        valid.empty() ? std::string("it takes no options") : fmt::format("valid keys: {}", fmt::join(valid, ", "));
    throw ProfileError(
        fmt::format("{}: unknown key '{}.{}' for {} ({})", setting.where, spec.section, setting.name, who, valid_text));
  }

  ResolvedOptions resolved;
  for (const mp_option_def& def : table) {
    if (def.name == nullptr) throw ProfileError(fmt::format("{} declares an option without a name", who));
    auto set = std::find_if(spec.options.begin(), spec.options.end(),
                            [&](const OptionSetting& s) { return s.name == def.name; });
    std::string value;
    if (set != spec.options.end()) {
      if (!normalise_option_value(def, set->text, set->base_dir, value)) {
        throw ProfileError(fmt::format("{}: {}.{}: {} expects {} ({}), got '{}'", set->where, spec.section, def.name,
                                       who, expectation(def), option_type_name(def), set->text));
      }
    } else if (def.default_value == nullptr) {
      throw ProfileError(fmt::format("{}.{} is required by {} ({}: {}) but the profile does not set it", spec.section,
                                     def.name, who, option_type_name(def), def.help ? def.help : ""));
    } else if (!normalise_option_value(def, def.default_value, fs::current_path(), value)) {
      // The plugin's own table is wrong; say so rather than pass a value it cannot read.
      throw ProfileError(fmt::format("{} declares default '{}' for option '{}', which is not {}", who,
                                     def.default_value, def.name, expectation(def)));
    }
    resolved.add(def.name, std::move(value));
  }
  return resolved;
}

}  // namespace moepage::profile
