// moepage plugin SDK, plugin side: option tables and typed access to the values the host hands a
// component (mp_options). Every getter throws mp::Error(MP_ERR_INVALID_ARG) naming the option.
#pragma once

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "moepage/cpp/error.hpp"
#include "moepage/cpp/structs.hpp"

namespace mp {

// A table entry; constexpr so option tables can be static constant arrays.
constexpr mp_option_def option(mp_option_type type, const char* name, const char* default_value, const char* help) {
  return mp_option_def{sizeof(mp_option_def), type, name, default_value, help, nullptr};
}
constexpr mp_option_def enum_option(const char* name, const char* choices, const char* default_value,
                                    const char* help) {
  return mp_option_def{sizeof(mp_option_def), MP_OPT_ENUM, name, default_value, help, choices};
}

// Typed read access to the normalised values the host hands a component. Every getter throws
// mp::Error(MP_ERR_INVALID_ARG) naming the option when it is missing or does not parse.
class Options {
 public:
  Options() = default;
  explicit Options(const mp_options* options) : options_(options) {}

  bool has(std::string_view name) const noexcept { return find(name) != nullptr; }

  std::string get_string(std::string_view name) const { return std::string(raw(name)); }

  int64_t get_int(std::string_view name) const {
    const char* text = raw(name);
    char* end = nullptr;
    errno = 0;
    const long long v = std::strtoll(text, &end, 10);
    if (*text == '\0' || end == nullptr || *end != '\0' || errno != 0) fail(name, text, "an integer");
    return static_cast<int64_t>(v);
  }

  double get_double(std::string_view name) const {
    const char* text = raw(name);
    char* end = nullptr;
    errno = 0;
    const double v = std::strtod(text, &end);
    if (*text == '\0' || end == nullptr || *end != '\0' || errno != 0) fail(name, text, "a number");
    return v;
  }

  bool get_bool(std::string_view name) const {
    const std::string_view text = raw(name);
    if (text == "true") return true;
    if (text == "false") return false;
    fail(name, text, "true or false");
  }

  // A size the host normalised to a byte count. "auto" is not a size: check is_auto() first.
  uint64_t get_size(std::string_view name) const {
    const char* text = raw(name);
    if (*text == '\0' || *text == '-' || *text == '+') fail(name, text, "a byte count");
    char* end = nullptr;
    errno = 0;
    const unsigned long long v = std::strtoull(text, &end, 10);
    if (end == nullptr || *end != '\0' || errno != 0) fail(name, text, "a byte count");
    return static_cast<uint64_t>(v);
  }

  bool is_auto(std::string_view name) const { return std::string_view(raw(name)) == "auto"; }

  const mp_options* c_options() const noexcept { return options_; }

 private:
  // Walks the values with the stride of the first one's struct_size (host_api.h), so a newer
  // host's larger elements are read correctly; every field read here is a 1.0 field.
  const mp_option_value* find(std::string_view name) const noexcept {
    if (options_ == nullptr || options_->values == nullptr || options_->count == 0) return nullptr;
    if (options_->values[0].struct_size < v1_size<mp_option_value>()) return nullptr;
    for (uint32_t i = 0; i < options_->count; ++i) {
      const auto* v = static_cast<const mp_option_value*>(mp_array_element(options_->values, i));
      if (v->struct_size != options_->values[0].struct_size) return nullptr;
      if (v->name != nullptr && name == v->name) return v;
    }
    return nullptr;
  }
  const char* raw(std::string_view name) const {
    const mp_option_value* v = find(name);
    if (v == nullptr || v->value == nullptr)
      throw Error(MP_ERR_INVALID_ARG, "option '" + std::string(name) + "' was not given to the component");
    return v->value;
  }
  [[noreturn]] static void fail(std::string_view name, std::string_view text, const char* expected) {
    throw Error(MP_ERR_INVALID_ARG,
                "option '" + std::string(name) + "' = '" + std::string(text) + "' is not " + expected);
  }
  const mp_options* options_ = nullptr;
};

}  // namespace mp
