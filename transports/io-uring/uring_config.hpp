// The io-uring transport's options (plugin.cpp declares them), read and range-checked once.
#pragma once
#include <cstdint>

#include "moepage/cpp/plugin_adapter.hpp"
#include "uring_files.hpp"

namespace moepage::uring {

struct UringConfig {
  uint32_t queue_depth = 32;        // reads in flight in the ring
  uint32_t buffers = 16;            // staging buffers
  uint64_t buffer_size = 1u << 20;  // bytes per staging buffer, and the largest single read
  Mode direct = Mode::kAuto;
  Mode fixed_buffers = Mode::kAuto;
  bool sqpoll = false;

  // Throws mp::Error(MP_ERR_INVALID_ARG) naming the option, its value and the range.
  static UringConfig from(const mp::Options& options);
  void validate() const;
};

}  // namespace moepage::uring
