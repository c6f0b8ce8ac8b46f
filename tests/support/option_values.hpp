// A component's options as the host would hand them over without a profile: every option of the
// descriptor's table at its default, some replaced, sizes normalised to byte counts (as the
// profile layer does). For tests that create plugin instances by hand.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "moepage/moepage.h"
#include "units/byte_size.hpp"

namespace moepage::test {

struct OptionValues {
  std::vector<std::string> names, values;
  std::vector<mp_option_value> raw;
  mp_options options{};

  OptionValues(const mp_component_descriptor& d, const std::vector<std::pair<std::string, std::string>>& set) {
    for (uint32_t i = 0; i < d.n_options; ++i) {
      const mp_option_def& def = d.options[i];
      names.emplace_back(def.name);
      values.emplace_back(def.default_value != nullptr ? def.default_value : "");
      for (const auto& [k, v] : set)
        if (k == names.back()) values.back() = v;
      const bool size = def.type == MP_OPT_SIZE || (def.type == MP_OPT_SIZE_OR_AUTO && values.back() != "auto");
      if (size) {
        const auto bytes = units::parse_size(values.back());
        if (!bytes) throw std::invalid_argument("option " + names.back() + ": not a size: " + values.back());
        values.back() = std::to_string(*bytes);
      }
    }
    for (size_t i = 0; i < names.size(); ++i)
      raw.push_back(mp_option_value{sizeof(mp_option_value), names[i].c_str(), values[i].c_str()});
    options = mp_options{sizeof(mp_options), static_cast<uint32_t>(raw.size()), raw.data()};
  }
  OptionValues(const OptionValues&) = delete;  // `options` points into the vectors
  OptionValues& operator=(const OptionValues&) = delete;
};

}  // namespace moepage::test
