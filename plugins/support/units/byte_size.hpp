// Byte counts as people write and read them. One grammar for every size a user types (profiles,
// --set, --budget, ablation specs) and one way to print sizes in messages and reports.
//
// Accepted: "4096", "64KiB", "512MiB", "8GiB", "2TiB" (binary units, powers of 1024) and "1KB",
// "1.5GB", "1TB" (decimal units, powers of 1000), with "B" allowed as a unit of one byte. Units
// are case-sensitive ("8gib" is refused) because "Mb" and "MB" mean different things elsewhere
// and guessing would hide a typo. One space may separate number and unit. Fractions are allowed
// and round down to whole bytes. "auto" is not a size: options that allow it check for it first.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace moepage::units {

// The byte count of `text`, or nullopt when it is not a size (negative, garbage, overflow).
std::optional<uint64_t> parse_size(std::string_view text);

// Words that describe the accepted forms, for error messages.
inline constexpr std::string_view kSizeExpectation =
    "a size such as 4096, 64KiB, 512MiB, 8GiB or 1.5GB (units B, KiB, MiB, GiB, TiB, KB, MB, GB, TB)";

// "512 B", "1.0 KiB", "13.25 MiB", "8.0 GiB": binary units, two decimals with a trailing zero
// dropped, rounded to nearest (1023.999 KiB prints as "1.0 MiB").
std::string format_bytes(uint64_t bytes);

// "13,369,344": every digit of an exact count, grouped by thousands.
std::string group_digits(uint64_t n);

// a * b, or nullopt when the product does not fit in 64 bits.
std::optional<uint64_t> checked_mul(uint64_t a, uint64_t b);

}  // namespace moepage::units
