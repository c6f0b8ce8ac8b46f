"""The training run's log: timestamped lines on stdout, kept for the bundle's training_log.txt."""
import time

START = time.time()
LOG_LINES = []  # the whole log also goes into the bundle (models/NAME/training_log.txt)


def log(message):
    line = f"[{time.time() - START:6.1f}s] {message}"
    LOG_LINES.append(line)
    print(line, flush=True)


def fail(message):
    log(f"FAILED: {message}")
    raise SystemExit(1)
