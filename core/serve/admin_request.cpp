#include "serve/admin_request.hpp"

#include <exception>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "serve/api_error.hpp"

namespace moepage::serve {

NamedProfile parse_admin_profile_request(std::string_view text, const std::filesystem::path& serving_model) {
  nlohmann::json body;
  try {
    body = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw ApiError(400, std::string("the request body is not valid JSON: ") + e.what(), {}, "invalid_json");
  }
  if (!body.is_object()) throw ApiError(400, "the request body must be a JSON object", {}, "invalid_json");
  if (!body.contains("profile") || !body["profile"].is_string() || body["profile"].get<std::string>().empty())
    throw bad_field("profile", "must be the path of a profile on the server");
  std::vector<std::string> overrides;
  if (body.contains("set")) {
    if (!body["set"].is_array()) throw bad_field("set", "must be an array of \"key.path=value\" strings");
    for (const auto& s : body["set"]) {
      if (!s.is_string()) throw bad_field("set", "must hold strings only");
      overrides.push_back(s.get<std::string>());
    }
  }
  const std::filesystem::path path = body["profile"].get<std::string>();
  NamedProfile out;
  try {
    out.profile = profile::load_profile(path, overrides);
  } catch (const std::exception& e) {
    throw ApiError(400, e.what(), "profile", "invalid_profile");
  }
  if (out.profile.model.empty()) out.profile.model = serving_model;
  out.name = path.stem().string();
  if (body.contains("name")) {
    if (!body["name"].is_string() || body["name"].get<std::string>().empty())
      throw bad_field("name", "must be a non-empty string");
    out.name = body["name"].get<std::string>();
  }
  return out;
}

}  // namespace moepage::serve
