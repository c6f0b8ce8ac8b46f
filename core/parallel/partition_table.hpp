// parallel.partition: table — which rank owns each expert, from a text file:
//
//   # comments and blank lines are skipped
//   0 1 0 1 1 0 ...     one line of n_experts ranks for every layer,
//   ...                 or n_layers such lines, one per layer in order
//
// Every rank must own at least one expert of every layer and the same number in every layer (a
// rank's pager gets one catalog of m experts per layer). Errors are one line naming the key, the
// file and the line.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>

#include "parallel/expert_partition.hpp"

namespace moepage::parallel {

// Throws std::invalid_argument starting with `key` (e.g. "parallel.partition_table (x.yaml:3:3)").
ExpertPartition read_partition_table(const std::filesystem::path& path, uint32_t n_layers, uint32_t n_experts,
                                     uint32_t ranks, const std::string& key);

}  // namespace moepage::parallel
