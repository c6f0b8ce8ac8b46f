// `moepage inspect DIR [--budget SIZE]`: what a checkpoint holds and what a paging budget buys.
#pragma once
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace moepage::ds4 {

// Config summary, layer schedule, tensor table (routed experts folded per layer and part), dense
// bytes, expert bytes, bytes per expert, file-size consistency and, with a budget, slots per
// layer = budget / (layers with routed experts x bytes per expert slot), capped at the expert
// count. Throws ckpt::CheckpointError for a checkpoint that does not load.
std::string inspect_report(const std::filesystem::path& dir, std::optional<uint64_t> budget);

}  // namespace moepage::ds4
