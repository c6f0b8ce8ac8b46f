#include "checkpoint/shard_index.hpp"

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "checkpoint/checkpoint_error.hpp"

namespace moepage::ckpt {
namespace {

bool plain_file_name(const std::string& f) {
  return !f.empty() && f != "." && f != ".." && f.find('/') == std::string::npos && f.find('\\') == std::string::npos &&
         f.find('\0') == std::string::npos;
}

}  // namespace

ShardIndex parse_shard_index(std::string_view json_text, std::string_view label) {
  const auto json = nlohmann::json::parse(json_text.begin(), json_text.end(), nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) fail_labelled(label, "malformed JSON");
  if (!json.is_object()) fail_labelled(label, "index must be a JSON object");
  const auto wm = json.find("weight_map");
  if (wm == json.end() || !wm->is_object()) fail_labelled(label, "missing object 'weight_map'");

  ShardIndex index;
  std::set<std::string> files;
  for (const auto& [tensor, file] : wm->items()) {
    if (!file.is_string())
      fail_labelled(label, "weight_map entry for tensor '" + tensor + "' must be a file name string");
    const auto& f = file.get_ref<const std::string&>();
    if (!plain_file_name(f)) {
      fail_labelled(label, "weight_map maps tensor '" + tensor + "' to '" + f +
                               "', which is not a plain file name in the folder");
    }
    index.weight_map.emplace(tensor, f);
    files.insert(f);
  }
  index.files.assign(files.begin(), files.end());

  const auto md = json.find("metadata");
  if (md != json.end() && md->is_object()) {
    const auto ts = md->find("total_size");
    if (ts != md->end() && ts->is_number_unsigned()) index.total_size = ts->get<uint64_t>();
  }
  return index;
}

std::string shard_index_json(const std::map<std::string, std::string>& weight_map, uint64_t total_size) {
  nlohmann::json j;
  j["metadata"] = {{"total_size", total_size}};
  j["weight_map"] = nlohmann::json::object();
  for (const auto& [t, f] : weight_map) j["weight_map"][t] = f;
  return j.dump(2) + "\n";
}

void write_shard_index(const std::filesystem::path& dir, const std::map<std::string, std::string>& weight_map,
                       uint64_t total_size) {
  const std::filesystem::path p = dir / kIndexFileName;
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << shard_index_json(weight_map, total_size);
  out.close();
  if (!out) throw CheckpointError(p.string() + ": cannot write");
}

}  // namespace moepage::ckpt
