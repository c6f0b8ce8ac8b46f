// The one exception type of the checkpoint layer. Its message is a single line that starts with
// the file (or directory) it concerns and names the tensor or key when there is one.
#pragma once
#include <stdexcept>
#include <string>

namespace moepage::ckpt {

class CheckpointError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace moepage::ckpt
