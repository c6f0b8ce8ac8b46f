// Human-readable byte sizes for messages: "512 B", "13.25 MiB", "318.0 MiB", "8.0 GiB".
#pragma once
#include <cstdint>
#include <optional>
#include <string>

namespace moepage::pager {

// Binary units; two decimals, with a trailing zero dropped ("40.0 MiB", "13.25 MiB").
std::string format_bytes(uint64_t bytes);

// a * b, or nullopt when the product does not fit in 64 bits.
std::optional<uint64_t> checked_mul(uint64_t a, uint64_t b);

}  // namespace moepage::pager
