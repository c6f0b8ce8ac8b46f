// The one exception type of the checkpoint layer. Its message is a single line that starts with
// the file (or directory) it concerns and names the tensor or key when there is one.
#pragma once
#include <cstdio>
#include <stdexcept>
#include <string>
#include <string_view>

namespace moepage::ckpt {

// Tensor names and keys come from the file, so a message quoting them could span lines or carry
// terminal control bytes; those bytes are written as escapes (\n, \xNN). Fuzzing found such names.
inline std::string single_line(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (const unsigned char c : text) {
    if (c >= 0x20 && c != 0x7f) {
      out += char(c);
    } else if (c == '\n') {
      out += "\\n";
    } else {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    }
  }
  return out;
}

class CheckpointError : public std::runtime_error {
 public:
  explicit CheckpointError(const std::string& what) : std::runtime_error(single_line(what)) {}
  explicit CheckpointError(const char* what) : CheckpointError(std::string(what)) {}
};

// Throws the usual "<label>: <what>" line, where label names the file (or directory).
[[noreturn]] inline void fail_labelled(std::string_view label, const std::string& what) {
  throw CheckpointError(std::string(label) + ": " + what);
}

}  // namespace moepage::ckpt
