// The launch mode of the GPU forward pass (launch.hpp says what overlapped launches are), in
// plain C++ so the model's host code can set it.
#pragma once

namespace moepage::ds4::gpu {

// Whether this host thread's launches may overlap now: set for one forward pass by
// OverlappedLaunches, and only where the device has the feature.
bool overlap_launches_now();

// For the span of one forward pass (or a test), launches from this thread overlap when `on`.
class OverlappedLaunches {
 public:
  explicit OverlappedLaunches(bool on);
  ~OverlappedLaunches();
  OverlappedLaunches(const OverlappedLaunches&) = delete;
  OverlappedLaunches& operator=(const OverlappedLaunches&) = delete;

 private:
  bool previous_;
};

}  // namespace moepage::ds4::gpu
