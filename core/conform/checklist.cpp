#include "conform/checklist.hpp"

#include <algorithm>

namespace moepage::conform {

void Checklist::begin_group(std::string group) {
  group_ = std::move(group);
  if (out_ != nullptr) *out_ << group_ << "\n";
}

bool Checklist::run(const std::string& name, const std::function<void()>& check) {
  try {
    check();
    record(name, true, "");
    return true;
  } catch (const std::exception& e) {
    record(name, false, e.what());
  } catch (...) {
    record(name, false, "an unknown exception escaped the check");
  }
  return false;
}

void Checklist::record(const std::string& name, bool passed, const std::string& detail) {
  results_.push_back(CheckResult{group_, name, passed, false, detail});
  if (out_ == nullptr) return;
  *out_ << "  [" << (passed ? "PASS" : "FAIL") << "] " << name;
  if (!detail.empty()) *out_ << (passed ? " (" : "\n         ") << detail << (passed ? ")" : "");
  *out_ << "\n";
  out_->flush();
}

void Checklist::skip(const std::string& name, const std::string& detail) {
  results_.push_back(CheckResult{group_, name, false, true, detail});
  if (out_ == nullptr) return;
  *out_ << "  [SKIP] " << name << "\n         " << detail << "\n";
  out_->flush();
}

size_t Checklist::failures() const noexcept {
  return static_cast<size_t>(
      std::count_if(results_.begin(), results_.end(), [](const CheckResult& r) { return !r.passed && !r.skipped; }));
}

size_t Checklist::skipped() const noexcept {
  return static_cast<size_t>(
      std::count_if(results_.begin(), results_.end(), [](const CheckResult& r) { return r.skipped; }));
}

std::string Checklist::summary() const {
  const size_t failed = failures();
  const size_t skips = skipped();
  return std::to_string(results_.size()) + " checks: " + std::to_string(results_.size() - failed - skips) +
         " passed, " + std::to_string(failed) + " failed, " + std::to_string(skips) + " skipped";
}

}  // namespace moepage::conform
