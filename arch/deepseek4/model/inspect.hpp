// `moepage inspect DIR [--budget SIZE]`: what a checkpoint holds and what a paging budget buys.
#pragma once
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace moepage::ds4 {

// Config summary, layer schedule, tensor table (routed experts folded per layer and part), dense
// bytes, expert bytes, bytes per expert, file-size consistency and, with a budget, slots per
// layer = budget / (layers with routed experts x bytes per expert slot), capped at the expert
// count. Throws ckpt::CheckpointError for a checkpoint that does not load.
std::string inspect_report(const std::filesystem::path& dir, std::optional<uint64_t> budget);

// "8GiB", "512 MiB", "1.5GB", "4096" -> bytes; nullopt when unparsable.
std::optional<uint64_t> parse_byte_size(std::string_view text);
// "12.75 MiB"
std::string human_bytes(uint64_t bytes);
// "13,369,344"
std::string grouped(uint64_t n);

}  // namespace moepage::ds4
