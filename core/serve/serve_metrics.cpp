#include "serve/serve_metrics.hpp"

#include <prometheus/text_serializer.h>

namespace moepage::serve {
namespace {
using prometheus::BuildCounter;
using prometheus::BuildGauge;
}  // namespace

ServeMetrics::ServeMetrics()
    : registry_(std::make_shared<prometheus::Registry>()),
      requests_(BuildCounter()
                    .Name("moepage_requests_total")
                    .Help("Generations run, by endpoint, serving profile and finish reason")
                    .Register(*registry_)),
      errors_(BuildCounter()
                  .Name("moepage_request_errors_total")
                  .Help("Responses with a 4xx or 5xx status, by status")
                  .Register(*registry_)),
      prompt_tokens_(BuildCounter()
                         .Name("moepage_prompt_tokens_total")
                         .Help("Prompt tokens prefilled, by serving profile")
                         .Register(*registry_)),
      generated_tokens_(BuildCounter()
                            .Name("moepage_generated_tokens_total")
                            .Help("Tokens generated, by serving profile")
                            .Register(*registry_)),
      prefill_rate_(BuildGauge()
                        .Name("moepage_prefill_tokens_per_second")
                        .Help("Prefill speed of the last request of each profile")
                        .Register(*registry_)),
      decode_rate_(BuildGauge()
                       .Name("moepage_decode_tokens_per_second")
                       .Help("Decode speed of the last request of each profile (0 when it decoded one token or none)")
                       .Register(*registry_)),
      layer_hits_(BuildCounter()
                      .Name("moepage_pager_layer_hits_total")
                      .Help("Routed-expert uses found resident, by profile and layer")
                      .Register(*registry_)),
      layer_misses_(BuildCounter()
                        .Name("moepage_pager_layer_misses_total")
                        .Help("Routed-expert uses read on demand, by profile and layer")
                        .Register(*registry_)),
      layer_miss_bytes_(BuildCounter()
                            .Name("moepage_pager_layer_miss_bytes_total")
                            .Help("Bytes read on demand for each layer's misses (misses x one expert's bytes)")
                            .Register(*registry_)),
      bytes_read_(BuildCounter()
                      .Name("moepage_pager_bytes_read_total")
                      .Help("Expert bytes the pager read while serving requests (demand and prefetch), by profile")
                      .Register(*registry_)),
      swaps_(BuildCounter()
                 .Name("moepage_profile_swaps_total")
                 .Help("POST /admin/profile swaps, by result (ok or failed)")
                 .Register(*registry_)),
      active_profile_(
          BuildGauge()
              .Name("moepage_active_profile_info")
              .Help(
                  "The profile serving the next request (value 1), with its pager, transport and expert-parallel ranks")
              .Register(*registry_)),
      queue_length_(BuildGauge()
                        .Name("moepage_queue_length")
                        .Help("Generations waiting for the engine, the running one excluded")
                        .Register(*registry_)
                        .Add({})) {}

void ServeMetrics::record_request(const RequestRecord& r) {
  requests_.Add({{"endpoint", r.endpoint}, {"profile", r.profile}, {"finish_reason", r.finish_reason}}).Increment();
  prompt_tokens_.Add({{"profile", r.profile}}).Increment(r.prompt_tokens);
  generated_tokens_.Add({{"profile", r.profile}}).Increment(r.generated_tokens);
  prefill_rate_.Add({{"profile", r.profile}}).Set(r.prefill_tokens_per_second);
  decode_rate_.Add({{"profile", r.profile}}).Set(r.decode_tokens_per_second);
}

void ServeMetrics::record_pager(const std::string& profile, const PagerDelta& d) {
  for (size_t layer = 0; layer < d.hits.size(); ++layer) {
    const std::map<std::string, std::string> labels{{"profile", profile}, {"layer", std::to_string(layer)}};
    layer_hits_.Add(labels).Increment(double(d.hits[layer]));
    layer_misses_.Add(labels).Increment(double(d.misses[layer]));
    layer_miss_bytes_.Add(labels).Increment(double(d.miss_bytes[layer]));
  }
  bytes_read_.Add({{"profile", profile}}).Increment(double(d.bytes_read));
}

void ServeMetrics::record_error(int status) { errors_.Add({{"status", std::to_string(status)}}).Increment(); }

void ServeMetrics::set_queue_length(size_t n) { queue_length_.Set(double(n)); }

void ServeMetrics::record_swap(bool ok) { swaps_.Add({{"result", ok ? "ok" : "failed"}}).Increment(); }

void ServeMetrics::set_active_profile(const std::string& name, const std::string& pager, const std::string& transport,
                                      uint32_t ranks) {
  if (active_ != nullptr) active_profile_.Remove(active_);
  active_ = &active_profile_.Add(
      {{"profile", name}, {"pager", pager}, {"transport", transport}, {"ranks", std::to_string(ranks)}});
  active_->Set(1);
}

std::string ServeMetrics::text() const { return prometheus::TextSerializer().Serialize(registry_->Collect()); }

}  // namespace moepage::serve
