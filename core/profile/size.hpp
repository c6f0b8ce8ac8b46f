// Size strings as profiles write them: "4096", "64KiB", "512MiB", "8GiB", "2TiB" (binary units,
// powers of 1024) and "1KB", "1.5GB", "1TB" (decimal units, powers of 1000), with "B" allowed as
// a unit of one byte. Units are case-sensitive ("8gib" is refused) because "Mb" and "MB" mean
// different things elsewhere and guessing would hide a typo. One space may separate number and
// unit. Fractions are allowed and round down to whole bytes.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace moepage::profile {

// The byte count of `text`, or nullopt when it is not a size (negative, garbage, overflow).
std::optional<uint64_t> parse_size(std::string_view text);

// Words that describe the accepted forms, for error messages.
inline constexpr std::string_view kSizeExpectation =
    "a size such as 4096, 64KiB, 512MiB, 8GiB or 1.5GB (units B, KiB, MiB, GiB, TiB, KB, MB, GB, TB)";

}  // namespace moepage::profile
