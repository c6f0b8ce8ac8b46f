// Builds the typed Profile from the merged flat settings: fixed keys get their types checked
// here; plugin options are carried as text for option_validation.cpp.
#include <algorithm>
#include <array>

#include <fmt/format.h>

#include "profile/profile.hpp"
#include "profile/profile_tree.hpp"
#include "profile/scalars.hpp"

namespace moepage::profile {
namespace fs = std::filesystem;
namespace {

[[noreturn]] void fail(const Setting& setting, std::string_view key, std::string_view expected) {
  const std::string got = setting.value.IsScalar() ? setting.value.Scalar() : std::string("a list");
  throw ProfileError(fmt::format("{}: {}: expected {}, got '{}'", setting.where, key, expected, got));
}

const Setting* find(const Settings& settings, const std::string& key) {
  auto it = settings.find(key);
  return it == settings.end() ? nullptr : &it->second;
}

std::string scalar(const Setting& setting, std::string_view key, std::string_view expected) {
  if (!setting.value.IsScalar()) fail(setting, key, expected);
  return setting.value.Scalar();
}

template <typename T, typename Parse>
T read_number(const Setting& setting, std::string_view key, std::string_view expected, Parse parse, T low, T high) {
  auto value = parse(scalar(setting, key, expected));
  if (!value || *value < low || *value > high) fail(setting, key, expected);
  return static_cast<T>(*value);
}

std::string read_choice(const Setting& setting, std::string_view key, std::span<const std::string_view> choices) {
  const std::string expected = fmt::format("one of {}", fmt::join(choices, "|"));
  std::string text = scalar(setting, key, expected);
  if (std::find(choices.begin(), choices.end(), text) == choices.end()) fail(setting, key, expected);
  return text;
}

std::vector<int32_t> read_token_ids(const Setting& setting) {
  constexpr std::string_view kExpected = "a list of token ids (integers >= 0), like [1, 2, 3]";
  std::vector<int32_t> ids;
  auto add = [&](const std::string& text) {
    auto id = parse_int(text);
    if (!id || *id < 0 || *id > INT32_MAX) fail(setting, "generate.prompt_ids", kExpected);
    ids.push_back(static_cast<int32_t>(*id));
  };
  if (setting.value.IsSequence()) {
    for (const auto& item : setting.value) add(item.Scalar());
  } else {
    // "1,2,3" as one scalar, the way a command line writes it.
    std::string text = setting.value.Scalar();
    size_t start = 0;
    while (start <= text.size()) {
      size_t comma = text.find(',', start);
      if (comma == std::string::npos) comma = text.size();
      std::string item = text.substr(start, comma - start);
      item.erase(0, item.find_first_not_of(' '));
      item.erase(item.find_last_not_of(' ') + 1);
      add(item);
      start = comma + 1;
    }
  }
  if (ids.empty()) fail(setting, "generate.prompt_ids", kExpected);
  return ids;
}

fs::path resolve(const Setting& setting, const std::string& text) {
  fs::path path(text);
  if (path.is_relative()) path = setting.base_dir / path;
  return fs::absolute(path).lexically_normal();
}

void read_component(const Settings& settings, ComponentSpec& spec) {
  const std::string prefix = spec.section + ".";
  for (auto it = settings.lower_bound(prefix); it != settings.end() && it->first.rfind(prefix, 0) == 0; ++it) {
    const std::string name = it->first.substr(prefix.size());
    const Setting& setting = it->second;
    if (name == "plugin") {
      spec.plugin = scalar(setting, it->first, "a plugin name");
      spec.plugin_where = setting.where;
      continue;
    }
    spec.options.push_back(
        OptionSetting{name, scalar(setting, it->first, "a single value"), setting.base_dir, setting.where});
  }
}

// parallel.partition and the table file it may name; each needs the other or neither.
void read_parallel_partition(const Settings& settings, ParallelSettings& parallel) {
  const Setting* partition = find(settings, "parallel.partition");
  if (partition) {
    constexpr std::array<std::string_view, 2> kPartitions{"round_robin", "table"};
    parallel.partition = read_choice(*partition, "parallel.partition", kPartitions);
  }
  const Setting* table = find(settings, "parallel.partition_table");
  if (table) {
    if (parallel.partition != "table")
      fail(*table, "parallel.partition_table", "no table unless parallel.partition is table");
    parallel.partition_table = resolve(*table, scalar(*table, "parallel.partition_table", "a file path"));
    parallel.table_where = table->where;
  } else if (parallel.partition == "table") {
    fail(*partition, "parallel.partition", "round_robin, or table with parallel.partition_table naming the file");
  }
}

}  // namespace

namespace {

Profile load_profile_from(const fs::path& path, const std::string_view* text, std::span<const Override> overrides,
                          const fs::path& override_base_dir) {
  Settings settings = read_profile_chain_text(path, text);
  for (const Override& o : overrides) {
    apply_override(settings, o.assignment, override_base_dir,
                   o.origin.empty() ? fmt::format("--set {}", o.assignment) : o.origin);
  }

  Profile profile;
  profile.source = fs::absolute(path).lexically_normal();
  if (const Setting* s = find(settings, "model")) profile.model = resolve(*s, scalar(*s, "model", "a folder path"));
  if (const Setting* s = find(settings, "device")) {
    constexpr std::array<std::string_view, 2> kDevices{"cpu", "hip"};
    profile.device = read_choice(*s, "device", kDevices);
  }
  read_component(settings, profile.arch_spec);
  profile.arch = profile.arch_spec.plugin;
  read_component(settings, profile.pager);
  read_component(settings, profile.transport);

  GenerateSettings& gen = profile.generate;
  if (const Setting* s = find(settings, "generate.prompt")) gen.prompt = scalar(*s, "generate.prompt", "text");
  if (const Setting* s = find(settings, "generate.prompt_ids")) gen.prompt_ids = read_token_ids(*s);
  if (const Setting* s = find(settings, "generate.max_tokens")) {
    gen.max_tokens =
        read_number<uint32_t>(*s, "generate.max_tokens", "an integer from 1 to 1000000", parse_int, 1u, 1000000u);
  }
  if (const Setting* s = find(settings, "generate.temperature")) {
    gen.temperature =
        read_number<double>(*s, "generate.temperature", "a number >= 0 (0 is greedy)", parse_float, 0.0, 1e6);
  }
  if (const Setting* s = find(settings, "generate.top_k")) {
    gen.top_k =
        read_number<uint32_t>(*s, "generate.top_k", "an integer >= 0 (0 keeps every token)", parse_int, 0u, UINT32_MAX);
  }
  if (const Setting* s = find(settings, "generate.top_p")) {
    gen.top_p = read_number<double>(*s, "generate.top_p", "a number in (0, 1]", parse_float, 1e-9, 1.0);
  }
  if (const Setting* s = find(settings, "generate.seed")) {
    gen.seed = read_number<uint64_t>(*s, "generate.seed", "an integer >= 0", parse_uint, 0ull, UINT64_MAX);
  }
  if (const Setting* s = find(settings, "generate.ignore_eos")) {
    const std::string text = scalar(*s, "generate.ignore_eos", "true or false");
    if (text != "true" && text != "false") fail(*s, "generate.ignore_eos", "true or false");
    gen.ignore_eos = text == "true";
  }
  if (const Setting* s = find(settings, "generate.warmup_prefills")) {
    gen.warmup_prefills =
        read_number<uint32_t>(*s, "generate.warmup_prefills", "an integer from 0 to 100", parse_int, 0u, 100u);
  }
  for (auto it = settings.lower_bound("generate."); it != settings.end() && it->first.rfind("generate.", 0) == 0; ++it)
    gen.where[it->first.substr(9)] = it->second.where;
  if (const Setting* s = find(settings, "parallel.ranks")) {
    profile.parallel.ranks = read_number<uint32_t>(
        *s, "parallel.ranks", "an integer from 1 to 1024 (ranks as threads of this process)", parse_int, 1u, 1024u);
    profile.parallel.ranks_where = s->where;
  }
  read_parallel_partition(settings, profile.parallel);
  if (const Setting* s = find(settings, "parallel.collective")) {
    constexpr std::array<std::string_view, 3> kCollectives{"auto", "host", "nccl"};
    profile.parallel.collective = read_choice(*s, "parallel.collective", kCollectives);
    profile.parallel.collective_where = s->where;
  }
  if (const Setting* s = find(settings, "parallel.collective_library"))
    profile.parallel.collective_library =
        scalar(*s, "parallel.collective_library", "a library name or path (libnccl.so.2, /opt/nccl/lib/libnccl.so.2)");
  if (const Setting* s = find(settings, "log.level")) {
    constexpr std::array<std::string_view, 5> kLevels{"trace", "debug", "info", "warn", "error"};
    profile.log_level = read_choice(*s, "log.level", kLevels);
  }
  return profile;
}

}  // namespace

Profile load_profile(const fs::path& path, std::span<const std::string> overrides, const fs::path& override_base_dir) {
  std::vector<Override> tagged;
  for (const std::string& assignment : overrides) tagged.push_back({assignment, ""});
  return load_profile(path, tagged, override_base_dir);
}

Profile load_profile(const fs::path& path, std::span<const Override> overrides, const fs::path& override_base_dir) {
  return load_profile_from(path, nullptr, overrides, override_base_dir);
}

Profile load_profile_text(std::string_view text, const fs::path& path, std::span<const Override> overrides,
                          const fs::path& override_base_dir) {
  return load_profile_from(path, &text, overrides, override_base_dir);
}

}  // namespace moepage::profile
