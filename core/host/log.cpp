#include "host/log.hpp"

#include <algorithm>

#include <spdlog/sinks/base_sink.h>
#include <spdlog/sinks/dist_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>

namespace moepage::host {
namespace {

struct LogState {
  std::mutex mutex;
  std::shared_ptr<spdlog::sinks::dist_sink_mt> fanout;
  std::shared_ptr<spdlog::sinks::sink> stderr_sink;
  spdlog::level::level_enum level = spdlog::level::info;         // what the user asked for
  spdlog::level::level_enum capture_floor = spdlog::level::off;  // what a LogCapture wants
  spdlog::level::level_enum effective() const { return std::min(level, capture_floor); }
  void apply() {
    stderr_sink->set_level(level);
    for (const auto& l : loggers) l->set_level(effective());
  }
  std::vector<std::shared_ptr<spdlog::logger>> loggers;
};

LogState& state() {
  // Leaked on purpose: plugins may log from destructors that run during static destruction.
  static LogState* s = [] {
    auto* st = new LogState;
    st->fanout = std::make_shared<spdlog::sinks::dist_sink_mt>();
    auto err = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
    err->set_pattern("[%^%l%$] %n: %v");
    st->fanout->add_sink(err);
    st->stderr_sink = err;
    st->apply();
    return st;
  }();
  return *s;
}

}  // namespace

std::shared_ptr<spdlog::logger> logger(std::string_view component) {
  LogState& st = state();
  std::lock_guard<std::mutex> lock(st.mutex);
  for (const auto& l : st.loggers)
    if (l->name() == component) return l;
  // Not registered with spdlog's global registry: plugin names must not clash with the CLI's own.
  auto l = std::make_shared<spdlog::logger>(std::string(component), st.fanout);
  l->set_level(st.effective());
  st.loggers.push_back(l);
  return l;
}

void set_log_level(spdlog::level::level_enum level) {
  LogState& st = state();
  std::lock_guard<std::mutex> lock(st.mutex);
  st.level = level;
  st.apply();
}

spdlog::level::level_enum log_level() {
  LogState& st = state();
  std::lock_guard<std::mutex> lock(st.mutex);
  return st.level;
}

class LogCapture::Sink : public spdlog::sinks::base_sink<std::mutex> {
 public:
  std::vector<std::string> copy() {
    std::lock_guard<std::mutex> lock(mutex_);
    return lines_;
  }
  void clear_lines() {
    std::lock_guard<std::mutex> lock(mutex_);
    lines_.clear();
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    std::string line(spdlog::level::to_string_view(msg.level).data(), spdlog::level::to_string_view(msg.level).size());
    line += ' ';
    line.append(msg.logger_name.data(), msg.logger_name.size());
    line += ": ";
    line.append(msg.payload.data(), msg.payload.size());
    lines_.push_back(std::move(line));
  }
  void flush_() override {}

 private:
  std::vector<std::string> lines_;
};

LogCapture::LogCapture(spdlog::level::level_enum level) : sink_(std::make_shared<Sink>()) {
  sink_->set_level(level);
  LogState& st = state();
  std::lock_guard<std::mutex> lock(st.mutex);
  saved_floor_ = st.capture_floor;
  st.capture_floor = std::min(st.capture_floor, level);
  st.fanout->add_sink(sink_);
  st.apply();
}

LogCapture::~LogCapture() {
  LogState& st = state();
  std::lock_guard<std::mutex> lock(st.mutex);
  st.fanout->remove_sink(sink_);
  st.capture_floor = saved_floor_;
  st.apply();
}

std::vector<std::string> LogCapture::lines() const { return sink_->copy(); }

std::string LogCapture::find(std::initializer_list<std::string_view> parts) const {
  for (const std::string& line : sink_->copy()) {
    bool all = true;
    for (std::string_view p : parts) all = all && line.find(p) != std::string::npos;
    if (all) return line;
  }
  return {};
}

std::string LogCapture::dump() const {
  std::string out;
  for (const std::string& line : sink_->copy()) out += line + "\n";
  return out;
}

void LogCapture::clear() { sink_->clear_lines(); }

}  // namespace moepage::host
