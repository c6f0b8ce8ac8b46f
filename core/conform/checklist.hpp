// A conformance checklist: named checks, each PASS or FAIL with one line of detail, printed as
// they finish. A check is a function that throws (anything) to fail; its message is the detail.
#pragma once
#include <functional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

namespace moepage::conform {

// What a check throws to fail with a message of its own.
class CheckFailed : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Fails the running check with `message` unless `condition` holds.
inline void expect(bool condition, const std::string& message) {
  if (!condition) throw CheckFailed(message);
}

// Runs `f`, which must fail by throwing `Failure` (a plugin error); returns it. Fails the running
// check, naming `what`, when f succeeds.
template <class Failure, class F>
Failure expect_failure(F&& f, const std::string& what) {
  try {
    f();
  } catch (const Failure& e) {
    return e;
  }
  throw CheckFailed(what + " succeeded");
}

struct CheckResult {
  std::string group;  // "transport 'pread'"
  std::string name;   // reads as a sentence: "reads past the end of the file fail naming the file"
  bool passed = false;
  bool skipped = false;  // not run: the component declared itself not available (MP_ERR_NOT_AVAILABLE)
  std::string detail;    // why it failed (or a note when it passed)
};

class Checklist {
 public:
  // `out` receives one line per finished check; null prints nothing.
  explicit Checklist(std::ostream* out = nullptr) : out_(out) {}

  void begin_group(std::string group);
  // Runs `check`; an exception fails it with the exception's message. Returns whether it passed.
  bool run(const std::string& name, const std::function<void()>& check);
  // Records an outcome decided elsewhere (e.g. a component that cannot be created at all).
  void record(const std::string& name, bool passed, const std::string& detail);

  // Records a check that could not run because the component says it is not available yet.
  void skip(const std::string& name, const std::string& detail);

  const std::vector<CheckResult>& results() const noexcept { return results_; }
  size_t failures() const noexcept;
  size_t skipped() const noexcept;
  // "12 checks: 12 passed, 0 failed, 0 skipped"
  std::string summary() const;

 private:
  std::ostream* out_;
  std::string group_;
  std::vector<CheckResult> results_;
};

}  // namespace moepage::conform
