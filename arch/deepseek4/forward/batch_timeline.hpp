// Where one prompt batch's time went, layer by layer (arch option `timeline`): what a profiler
// would say, without one. The marks sit where a batch's work is queued: its start; per layer the
// attention block's mHC site done (on the GPU with the previous block's hc_post folded in), its
// attention done, the MoE block's mHC site done, its MoE (router, shared and routed experts) done;
// its end (head and output). On the GPU they are events on the compute stream, read once the batch
// has been waited for, beside the host's clock at the moment each was queued; on the CPU, where
// the work runs as it is issued, both are the host's clock.
#pragma once
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace moepage::ds4 {

struct BatchTimeline {
  uint32_t tokens = 0;
  double wall_ms = 0;                        // host: the batch from its first work queued to its result in hand
  double queued_ms = 0;                      // host: until its last work was queued
  double device_ms = 0;                      // the compute stream from the start mark to the end mark
  std::vector<double> attention_site_ms;     // [layer] device time of the attention block's mHC site
  std::vector<double> attention_ms;          // [layer] ... of its attention
  std::vector<double> moe_site_ms;           // [layer] ... of the MoE block's mHC site
  std::vector<double> moe_ms;                // [layer] ... of its MoE
  double head_ms = 0;                        // device: after the last layer to the end mark
};

// Host time of the marks of one batch, so the device's marks can be set beside them.
class HostMarks {
 public:
  void start() {
    t0_ = std::chrono::steady_clock::now();
    at_ms_.clear();
  }
  void reserve(size_t marks) { at_ms_.reserve(marks); }
  void mark() { at_ms_.push_back(since_start_ms()); }
  double since_start_ms() const {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0_).count();
  }
  const std::vector<double>& at_ms() const { return at_ms_; }

 private:
  std::chrono::steady_clock::time_point t0_{};
  std::vector<double> at_ms_;
};

// The timeline of a batch from its marks: device_ms[i] is mark i on the device, the marks in order
// start, then (attention site, attention, MoE site, MoE) per layer, then end (2 + 4 x layers of
// them). Throws std::invalid_argument for any other count.
BatchTimeline timeline_from_marks(uint32_t tokens, const std::vector<double>& device_ms, double queued_ms,
                                  double wall_ms);

// One line for the log: "prompt batch of 1024 tokens: 21.800 ms wall, 19.300 ms on the device (all
// queued after 1.200 ms); layer 0 mHC 0.150 + attention 1.500 + mHC 0.150 + MoE 3.050; ...; head
// 0.310 ms".
std::string describe(const BatchTimeline& t);

}  // namespace moepage::ds4
