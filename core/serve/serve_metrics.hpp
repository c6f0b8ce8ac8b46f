// What GET /metrics shows, in the Prometheus text format (prometheus-cpp keeps the series and
// writes the exposition). Every per-request series carries the profile that served the request,
// so a live profile swap shows in the counters: the pager's hits, misses and bytes per layer of
// one profile keep counting only while that profile serves.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

namespace moepage::serve {

// What one request did, for the counters.
struct RequestRecord {
  std::string endpoint;       // completions | chat.completions
  std::string profile;        // the serving profile's name
  std::string finish_reason;  // stop | length | cancelled | error
  uint32_t prompt_tokens = 0, generated_tokens = 0;
  double prefill_tokens_per_second = 0, decode_tokens_per_second = 0;
};

// The pager's counters that moved during one request (layer i at index i).
struct PagerDelta {
  std::vector<uint64_t> hits, misses, miss_bytes;
  uint64_t bytes_read = 0;  // demand and prefetch, all layers
};

class ServeMetrics {
 public:
  ServeMetrics();
  void record_request(const RequestRecord& r);
  void record_pager(const std::string& profile, const PagerDelta& d);
  // A response with a 4xx or 5xx status.
  void record_error(int status);
  void set_queue_length(size_t n);
  void record_swap(bool ok);
  // The serving profile: one series with value 1, the previous one removed.
  void set_active_profile(const std::string& name, const std::string& pager, const std::string& transport,
                          uint32_t ranks = 1);
  std::string text() const;

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Counter>& requests_;
  prometheus::Family<prometheus::Counter>& errors_;
  prometheus::Family<prometheus::Counter>& prompt_tokens_;
  prometheus::Family<prometheus::Counter>& generated_tokens_;
  prometheus::Family<prometheus::Gauge>& prefill_rate_;
  prometheus::Family<prometheus::Gauge>& decode_rate_;
  prometheus::Family<prometheus::Counter>& layer_hits_;
  prometheus::Family<prometheus::Counter>& layer_misses_;
  prometheus::Family<prometheus::Counter>& layer_miss_bytes_;
  prometheus::Family<prometheus::Counter>& bytes_read_;
  prometheus::Family<prometheus::Counter>& swaps_;
  prometheus::Family<prometheus::Gauge>& active_profile_;
  prometheus::Gauge& queue_length_;
  prometheus::Gauge* active_ = nullptr;
};

}  // namespace moepage::serve
