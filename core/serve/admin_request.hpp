// The body of POST /admin/profile: which profile to serve next.
//   {"profile": "configs/lru.yaml", "set": ["pager.budget=2MiB"], "name": "lru-2MiB"}
// `profile` is a path on the server (relative to its working folder), `set` are --set overrides
// applied in order, `name` labels the profile in /metrics (default: the file name without .yaml).
// A profile without a model serves the running model.
#pragma once
#include <filesystem>
#include <string_view>

#include "serve/serve_engine.hpp"

namespace moepage::serve {

// Throws ApiError 400 for a malformed body or a profile that does not load.
NamedProfile parse_admin_profile_request(std::string_view body, const std::filesystem::path& serving_model);

}  // namespace moepage::serve
