// moepage plugin SDK: the struct_size conventions of host_api.h in C++, for plugins and hosts
// alike: write_out() for output structs, read_in() for input structs, VersionedArray for arrays
// of versioned structs (stride = the first element's struct_size).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "moepage/cpp/error.hpp"

namespace mp {

// The oldest size of T a receiver accepts: its size in ABI 1.0. Structs that have not grown since
// 1.0 use sizeof; a struct that gains a field gets a specialisation here naming its 1.0 end.
template <class T>
constexpr uint32_t v1_size() noexcept {
  return static_cast<uint32_t>(sizeof(T));
}
template <>
constexpr uint32_t v1_size<mp_trace_event>() noexcept {
  return static_cast<uint32_t>(offsetof(mp_trace_event, reserved) + sizeof(mp_trace_event::reserved));
}
template <>
constexpr uint32_t v1_size<mp_acquire_result>() noexcept {
  return static_cast<uint32_t>(offsetof(mp_acquire_result, pending));  // 1.5 appended pending
}

// Writes `full` into the caller's output struct: only what its struct_size covers, never
// struct_size itself. Throws MP_ERR_INVALID_ARG, writing nothing, for NULL or a struct_size of 0.
template <class T>
void write_out(T* out, const T& full, std::string_view what) {
  if (mp_write_struct(out, &full, static_cast<uint32_t>(sizeof(T))) != MP_OK)
    throw Error(MP_ERR_INVALID_ARG, format("{}: the output struct is NULL or its struct_size ({}) is too small; the "
                                           "caller sets struct_size to the size of the struct it passes",
                                           what, out == nullptr ? 0u : out->struct_size));
}

// The sender's input struct as this SDK's T, the fields it lacks zero. Throws MP_ERR_INVALID_ARG
// for NULL or a struct_size below v1_size<T>().
template <class T>
T read_in(const T* in, std::string_view what) {
  T full;
  if (mp_read_struct(&full, static_cast<uint32_t>(sizeof(T)), in, v1_size<T>()) != MP_OK)
    throw Error(MP_ERR_INVALID_ARG, format("{}: the struct is NULL or its struct_size ({}) is smaller than {}", what,
                                           in == nullptr ? 0u : in->struct_size, v1_size<T>()));
  return full;
}

// An array of n versioned structs from the other side, walked with the first element's
// struct_size as stride. The constructor checks every element (a struct_size below v1_size<T>()
// or differing from the first one's is MP_ERR_INVALID_ARG naming the element); operator[] returns
// a copy normalised to this SDK's T.
template <class T>
class VersionedArray {
 public:
  VersionedArray(const T* base, uint32_t n, std::string_view what) : base_(base), n_(n) {
    if (n == 0) return;
    if (base == nullptr) throw Error(MP_ERR_INVALID_ARG, format("{}: {} elements but the array is NULL", what, n));
    stride_ = base->struct_size;
    if (stride_ < v1_size<T>())
      throw Error(MP_ERR_INVALID_ARG,
                  format("{}: element 0: struct_size {} is smaller than {}", what, stride_, v1_size<T>()));
    for (uint32_t i = 1; i < n; ++i) {
      const uint32_t size = element(i)->struct_size;
      if (size != stride_)
        throw Error(MP_ERR_INVALID_ARG, format("{}: element {}: struct_size {} differs from the first element's {} "
                                               "(the stride of the array)",
                                               what, i, size, stride_));
    }
  }

  uint32_t size() const noexcept { return n_; }
  uint32_t stride() const noexcept { return stride_; }
  T operator[](uint32_t i) const noexcept {
    T full;
    mp_read_struct(&full, static_cast<uint32_t>(sizeof(T)), element(i), 0);
    return full;
  }
  std::vector<T> to_vector() const {
    std::vector<T> out;
    out.reserve(n_);
    for (uint32_t i = 0; i < n_; ++i) out.push_back((*this)[i]);
    return out;
  }

 private:
  const T* element(uint32_t i) const noexcept { return static_cast<const T*>(mp_array_element(base_, i)); }
  const T* base_;
  uint32_t n_;
  uint32_t stride_ = 0;
};

}  // namespace mp
