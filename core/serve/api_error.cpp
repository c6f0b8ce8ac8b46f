#include "serve/api_error.hpp"

namespace moepage::serve {

std::string ApiError::type() const {
  switch (status_) {
    case 401: return "authentication_error";
    case 403: return "permission_error";
    case 404: return "not_found_error";
    case 409: return "conflict_error";
    case 413: return "request_too_large";
    case 429: return "rate_limit_error";
    case 503: return "service_unavailable";
    default: return status_ >= 500 ? "server_error" : "invalid_request_error";
  }
}

nlohmann::json ApiError::body() const {
  nlohmann::json error{{"message", what()}, {"type", type()}, {"param", nullptr}, {"code", nullptr}};
  if (!param_.empty()) error["param"] = param_;
  if (!code_.empty()) error["code"] = code_;
  return {{"error", error}};
}

}  // namespace moepage::serve
