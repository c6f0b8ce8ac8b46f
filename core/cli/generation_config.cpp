#include "cli/generation_config.hpp"

#include <cmath>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "fileio/text_file.hpp"

namespace moepage::cli {
namespace fs = std::filesystem;

std::vector<std::string> apply_generation_config(const fs::path& model, profile::GenerateSettings& gen,
                                                 const std::function<bool(const std::string&)>& user_set) {
  const fs::path path = model / "generation_config.json";
  if (!fs::exists(path)) return {};
  const std::optional<std::string> text = fileio::try_read_file(path);
  if (!text) throw std::runtime_error(path.string() + ": cannot read");
  return apply_generation_config_text(*text, path, gen, user_set);
}

std::vector<std::string> apply_generation_config_text(const std::string& text, const fs::path& path,
                                                      profile::GenerateSettings& gen,
                                                      const std::function<bool(const std::string&)>& user_set) {
  std::vector<std::string> applied;
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) throw std::runtime_error(path.string() + ": not a JSON object");

  auto bad = [&](const char* key, const char* expected) {
    return std::runtime_error(path.string() + ": " + key + ": expected " + expected + ", got " + j.at(key).dump());
  };
  auto number = [&](const char* key, double low, double high, bool low_open, const char* expected) {
    const auto& v = j.at(key);
    if (!v.is_number()) throw bad(key, expected);
    const double x = v.get<double>();
    if (!std::isfinite(x) || x > high || x < low || (low_open && x == low)) throw bad(key, expected);
    return x;
  };
  auto integer = [&](const char* key, int64_t low, int64_t high, const char* expected) {
    const auto& v = j.at(key);
    if (!v.is_number_integer() || v.get<int64_t>() < low || v.get<int64_t>() > high) throw bad(key, expected);
    return v.get<int64_t>();
  };
  auto take = [&](const std::string& key) {
    if (user_set(key)) return false;
    applied.push_back(key);
    return true;
  };

  bool sample = false;
  if (j.contains("do_sample")) {
    if (!j["do_sample"].is_boolean()) throw bad("do_sample", "true or false");
    sample = j["do_sample"].get<bool>();
  }
  if (!sample) {
    if (j.contains("do_sample") && take("temperature")) gen.temperature = 0.0;
  } else {
    const double t = j.contains("temperature") ? number("temperature", 0.0, 1e6, false, "a number >= 0") : 1.0;
    if (take("temperature")) gen.temperature = t;
    if (j.contains("top_k")) {
      const int64_t k = integer("top_k", 0, UINT32_MAX, "an integer >= 0");
      if (take("top_k")) gen.top_k = uint32_t(k);
    }
    if (j.contains("top_p")) {
      const double p = number("top_p", 0.0, 1.0, true, "a number in (0, 1]");
      if (take("top_p")) gen.top_p = p;
    }
  }
  if (j.contains("max_new_tokens")) {
    const int64_t n = integer("max_new_tokens", 1, 1000000, "an integer from 1 to 1000000");
    if (take("max_tokens")) gen.max_tokens = uint32_t(n);
  }
  return applied;
}

}  // namespace moepage::cli
