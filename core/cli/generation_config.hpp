// A model folder's generation_config.json (Hugging Face): the sampling defaults its authors chose.
// They fill the generate settings the user did not set; a profile or command-line value wins.
#pragma once
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "profile/profile.hpp"

namespace moepage::cli {

// Reads `model`/generation_config.json when it exists and sets each generate key it gives that
// `user_set(key)` says the user did not set: do_sample false -> temperature 0 (greedy);
// do_sample true -> temperature (1 when absent), top_k, top_p; max_new_tokens -> max_tokens.
// Returns the keys it set, for the log. Throws std::runtime_error naming the file and the key
// for a value out of range or of the wrong type.
std::vector<std::string> apply_generation_config(const std::filesystem::path& model, profile::GenerateSettings& gen,
                                                 const std::function<bool(const std::string&)>& user_set);

// The same for the file's text, read already; `path` names it in errors (the fuzz target's way in).
std::vector<std::string> apply_generation_config_text(const std::string& text, const std::filesystem::path& path,
                                                      profile::GenerateSettings& gen,
                                                      const std::function<bool(const std::string&)>& user_set);

}  // namespace moepage::cli
