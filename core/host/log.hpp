// Host logging: one spdlog logger per component name, all writing into one shared fan-out sink
// (stderr by default), so the CLI sets one level for everything and tests can capture every line.
#pragma once

#include <initializer_list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <spdlog/spdlog.h>

namespace moepage::host {

// The logger for a component ("loader", "registry", a plugin's name); created on first use.
std::shared_ptr<spdlog::logger> logger(std::string_view component);

// Sets the level of every host logger, present and future.
void set_log_level(spdlog::level::level_enum level);
spdlog::level::level_enum log_level();

// Test hook: while alive, every line logged by a host logger at `level` or above is also kept
// here as "<level> <component>: <message>" (level spelled as spdlog does: debug, info, warning...).
// Lowers the loggers' level to `level` for its lifetime if needed (stderr keeps the user's level).
class LogCapture {
 public:
  explicit LogCapture(spdlog::level::level_enum level = spdlog::level::trace);
  ~LogCapture();
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;

  std::vector<std::string> lines() const;
  // The first captured line that contains every one of `parts`, or "" when none does.
  std::string find(std::initializer_list<std::string_view> parts) const;
  // All captured lines joined with newlines (for failure messages).
  std::string dump() const;
  void clear();

  class Sink;

 private:
  std::shared_ptr<Sink> sink_;
  spdlog::level::level_enum saved_floor_ = spdlog::level::off;
};

}  // namespace moepage::host
