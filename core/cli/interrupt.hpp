// SIGINT and SIGTERM during generation: the first one is noted (the token being computed is
// finished, then the run stops, completes its trace and statistics and exits 128 + the signal);
// a second one kills the process as usual, for a run that will not stop. A signal ignored when
// the process started (SIGINT in a shell's background job) stays ignored.
#pragma once

namespace moepage::cli {

class InterruptGuard {
 public:
  InterruptGuard();   // installs the handlers
  ~InterruptGuard();  // restores the previous ones
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;

  // The first signal received since construction, or 0.
  static int received();
};

}  // namespace moepage::cli
