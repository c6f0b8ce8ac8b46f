// moepage plugin SDK, plugin side: the exception that fails a call with a status, a tiny `{}`
// formatter, and logging through the host. Plugins must not link spdlog/fmt.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

#include "moepage/moepage.h"

namespace mp {

// The exception plugin code throws to fail a call with a specific status and message.
class Error : public std::runtime_error {
 public:
  Error(mp_status status, const std::string& message) : std::runtime_error(message), status_(status) {}
  mp_status status() const noexcept { return status_; }

 private:
  mp_status status_;
};

// ---- formatting -------------------------------------------------------------------------------

namespace detail {
inline void format_next(std::ostringstream& out, std::string_view& rest) {
  // No argument left: copy the rest, unescaping "{{" and "}}".
  for (size_t i = 0; i < rest.size(); ++i) {
    if ((rest[i] == '{' || rest[i] == '}') && i + 1 < rest.size() && rest[i + 1] == rest[i]) ++i;
    out << rest[i];
  }
  rest = {};
}

template <class Arg, class... Rest>
void format_next(std::ostringstream& out, std::string_view& rest, const Arg& arg, const Rest&... more) {
  for (size_t i = 0; i < rest.size(); ++i) {
    const char c = rest[i];
    if ((c == '{' || c == '}') && i + 1 < rest.size() && rest[i + 1] == c) {
      out << c;
      ++i;
      continue;
    }
    if (c == '{' && i + 1 < rest.size() && rest[i + 1] == '}') {
      out << arg;
      rest = rest.substr(i + 2);
      format_next(out, rest, more...);
      return;
    }
    out << c;
  }
  rest = {};  // more arguments than placeholders: the extra ones are dropped
}
}  // namespace detail

// format("read {} bytes of {}", n, path): each "{}" takes the next argument (streamed with <<);
// "{{" and "}}" are literal braces. No format specs: this is a deliberately tiny subset.
template <class... Args>
std::string format(std::string_view fmt, const Args&... args) {
  std::ostringstream out;
  std::string_view rest = fmt;
  detail::format_next(out, rest, args...);
  return out.str();
}

// Logs through the host's logger under the component's name.
class HostLog {
 public:
  HostLog() = default;
  HostLog(const mp_host_api* host, std::string component) : host_(host), component_(std::move(component)) {}

  template <class... Args>
  void trace(std::string_view f, const Args&... a) const {
    emit(MP_LOG_TRACE, f, a...);
  }
  template <class... Args>
  void debug(std::string_view f, const Args&... a) const {
    emit(MP_LOG_DEBUG, f, a...);
  }
  template <class... Args>
  void info(std::string_view f, const Args&... a) const {
    emit(MP_LOG_INFO, f, a...);
  }
  template <class... Args>
  void warn(std::string_view f, const Args&... a) const {
    emit(MP_LOG_WARN, f, a...);
  }
  template <class... Args>
  void error(std::string_view f, const Args&... a) const {
    emit(MP_LOG_ERROR, f, a...);
  }

  // Already formatted text.
  void log(mp_log_level level, const std::string& message) const noexcept {
    if (host_ == nullptr || !MP_HAS_FIELD(host_, mp_host_api, log) || host_->log == nullptr) return;
    host_->log(host_->ctx, level, component_.c_str(), message.c_str());
  }

 private:
  template <class... Args>
  void emit(mp_log_level level, std::string_view f, const Args&... a) const noexcept {
    try {
      log(level, ::mp::format(f, a...));
    } catch (...) {
      // Logging must never turn into a failure of the call that logs.
    }
  }
  const mp_host_api* host_ = nullptr;
  std::string component_;
};

}  // namespace mp
