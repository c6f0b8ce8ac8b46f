#include "parallel/partition_table.hpp"

#include <fstream>
#include <sstream>
#include <stdexcept>
#include <vector>

namespace moepage::parallel {
namespace {

// The ranks of one line; throws naming the line for a word that is not a rank below `ranks`, or
// for more than max_words of them.
std::vector<uint32_t> parse_line(const std::string& line, uint32_t ranks, size_t max_words, const std::string& where) {
  std::vector<uint32_t> out;
  std::istringstream words(line);
  for (std::string word; words >> word;) {
    size_t used = 0;
    unsigned long v = 0;
    try {
      v = std::stoul(word, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != word.size() || word[0] == '-' || v >= ranks)
      throw std::invalid_argument(where + ": '" + word + "' is not a rank from 0 to " + std::to_string(ranks - 1));
    out.push_back(uint32_t(v));
    if (out.size() > max_words)  // a line is refused as soon as it is too long, not after reading it all
      throw std::invalid_argument(where + ": more than " + std::to_string(max_words) + " ranks on one line");
  }
  return out;
}

// Each rank owns the same number of experts, at least one, in every layer.
void check_counts(const ExpertPartition& p, const std::string& key) {
  for (uint32_t r = 0; r < p.ranks(); ++r) {
    uint32_t first = 0;
    for (uint32_t l = 0; l < p.n_layers(); ++l) {
      uint32_t m = 0;
      for (uint32_t e = 0; e < p.n_experts(); ++e) m += p.owner(l, e) == r ? 1 : 0;
      if (m == 0)
        throw std::invalid_argument(key + ": rank " + std::to_string(r) + " owns no expert of layer " +
                                    std::to_string(l));
      if (l == 0) first = m;
      if (m != first)
        throw std::invalid_argument(key + ": rank " + std::to_string(r) + " owns " + std::to_string(first) +
                                    " experts of layer 0 but " + std::to_string(m) + " of layer " + std::to_string(l) +
                                    "; a rank must own as many in every layer");
    }
  }
}

}  // namespace

ExpertPartition read_partition_table(const std::filesystem::path& path, uint32_t n_layers, uint32_t n_experts,
                                     uint32_t ranks, const std::string& key) {
  std::ifstream in(path);
  if (!in) throw std::invalid_argument(key + ": cannot read " + path.string());
  std::vector<std::vector<uint32_t>> rows;
  std::string line;
  for (uint32_t number = 1; std::getline(in, line); ++number) {
    if (const size_t hash = line.find('#'); hash != std::string::npos) line.erase(hash);
    const std::string where = key + ": " + path.string() + ":" + std::to_string(number);
    std::vector<uint32_t> row = parse_line(line, ranks, n_experts, where);
    if (row.empty()) continue;
    if (row.size() != n_experts)
      throw std::invalid_argument(where + ": " + std::to_string(row.size()) + " ranks, the model has " +
                                  std::to_string(n_experts) + " experts per layer");
    if (rows.size() == n_layers)  // refused at the first line too many, not at the end
      throw std::invalid_argument(key + ": " + path.string() + " has " + std::to_string(rows.size() + 1) +
                                  " lines of ranks; give 1 (every layer) or " + std::to_string(n_layers) +
                                  " (one per layer)");
    rows.push_back(std::move(row));
  }
  if (rows.size() != 1 && rows.size() != n_layers)
    throw std::invalid_argument(key + ": " + path.string() + " has " + std::to_string(rows.size()) +
                                " lines of ranks; give 1 (every layer) or " + std::to_string(n_layers) +
                                " (one per layer)");
  std::vector<uint32_t> owner;
  for (uint32_t l = 0; l < n_layers; ++l) {
    const std::vector<uint32_t>& row = rows[rows.size() == 1 ? 0 : l];
    owner.insert(owner.end(), row.begin(), row.end());
  }
  ExpertPartition p = ExpertPartition::from_owners(n_layers, n_experts, ranks, std::move(owner));
  check_counts(p, key);
  return p;
}

}  // namespace moepage::parallel
