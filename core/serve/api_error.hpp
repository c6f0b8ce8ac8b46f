// Errors a request gets back, shaped as the OpenAI API shapes them:
//   {"error": {"message": "...", "type": "invalid_request_error", "param": "max_tokens", "code": "..."}}
// with a 4xx status for what the client sent and 5xx for what went wrong here.
#pragma once
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

namespace moepage::serve {

class ApiError : public std::runtime_error {
 public:
  ApiError(int status, std::string message, std::string param = {}, std::string code = {})
      : std::runtime_error(std::move(message)), status_(status), param_(std::move(param)), code_(std::move(code)) {}

  int status() const { return status_; }
  const std::string& param() const { return param_; }
  const std::string& code() const { return code_; }
  // invalid_request_error, authentication_error, not_found_error, rate_limit_error, server_error...
  std::string type() const;
  nlohmann::json body() const;

 private:
  int status_;
  std::string param_;
  std::string code_;
};

// A 400 naming the field and what was expected.
inline ApiError bad_field(const std::string& field, const std::string& expected) {
  return ApiError(400, "'" + field + "' " + expected, field, "invalid_value");
}

}  // namespace moepage::serve
