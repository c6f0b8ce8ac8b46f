#include "cli/interrupt.hpp"

#include <csignal>

namespace moepage::cli {
namespace {

volatile std::sig_atomic_t g_received = 0;
struct sigaction g_previous_int {
}, g_previous_term{};

extern "C" void note_signal(int signo) {
  if (g_received == 0) g_received = signo;
}

}  // namespace

InterruptGuard::InterruptGuard() {
  g_received = 0;
  struct sigaction action {};
  action.sa_handler = note_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESETHAND | SA_RESTART;  // the second signal takes the default action
  // A signal the parent set to be ignored (SIGINT for a background job of a shell) stays ignored.
  sigaction(SIGINT, nullptr, &g_previous_int);
  sigaction(SIGTERM, nullptr, &g_previous_term);
  if (g_previous_int.sa_handler != SIG_IGN) sigaction(SIGINT, &action, nullptr);
  if (g_previous_term.sa_handler != SIG_IGN) sigaction(SIGTERM, &action, nullptr);
}

InterruptGuard::~InterruptGuard() {
  sigaction(SIGINT, &g_previous_int, nullptr);
  sigaction(SIGTERM, &g_previous_term, nullptr);
}

int InterruptGuard::received() { return int(g_received); }

}  // namespace moepage::cli
