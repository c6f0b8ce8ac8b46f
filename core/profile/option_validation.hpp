// Checks a pager's or transport's options from a profile against the plugin's option table
// (mp_option_def[]) and produces the normalised list the plugin receives: every option of the
// table in table order, defaults filled in, sizes as byte counts, paths absolute.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "moepage/options.h"
#include "profile/profile.hpp"

namespace moepage::profile {

// Owns the strings an mp_options points into. Move-only: the C view points into its own storage.
class ResolvedOptions {
 public:
  ResolvedOptions() = default;
  ResolvedOptions(const ResolvedOptions&) = delete;
  ResolvedOptions& operator=(const ResolvedOptions&) = delete;
  ResolvedOptions(ResolvedOptions&&) = default;
  ResolvedOptions& operator=(ResolvedOptions&&) = default;

  void add(std::string name, std::string value);
  // The value of `name`, or nullptr when the table has no such option.
  const std::string* find(std::string_view name) const;
  size_t size() const { return names_.size(); }
  const std::string& name(size_t i) const { return names_[i]; }
  const std::string& value(size_t i) const { return values_[i]; }
  // The C view handed to a plugin's create(); valid while this object lives and is not moved.
  const mp_options* c_options();

 private:
  std::vector<std::string> names_;
  std::vector<std::string> values_;
  std::vector<mp_option_value> c_values_;
  mp_options c_options_{};
};

// Short type name for messages and `moepage plugins`: bool, int, float, string, size, size|auto,
// path, enum(a|b|c).
std::string option_type_name(const mp_option_def& def);

// Validates `spec.options` against `table`, the option table of plugin `spec.plugin` of kind
// `spec.section`. Throws ProfileError naming the key, where it was set, the plugin, and what was
// expected (for unknown keys, the valid keys).
ResolvedOptions validate_options(const ComponentSpec& spec, std::span<const mp_option_def> table);

// Normalises one value of type `def.type`; returns false when `text` does not fit (`out` untouched).
bool normalise_option_value(const mp_option_def& def, std::string_view text, const std::filesystem::path& base_dir,
                            std::string& out);

}  // namespace moepage::profile
