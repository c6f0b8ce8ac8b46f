#include "serve/serve_engine.hpp"

#include <malloc.h>

#include <exception>
#include <filesystem>
#include <stdexcept>

#include "cli/generate.hpp"
#include "host/log.hpp"
#include "serve/api_error.hpp"
#include "serve/stop_matcher.hpp"

namespace moepage::serve {
namespace {

struct PagerCounters {
  std::vector<uint64_t> hits, misses;
  uint64_t bytes_read = 0;
};

// Summed over the ranks' pagers (one without ranks).
PagerCounters read_counters(const std::vector<mp::PagerHandle*>& pagers, uint32_t n_layers) {
  PagerCounters out;
  out.hits.assign(n_layers, 0);
  out.misses.assign(n_layers, 0);
  for (mp::PagerHandle* pager : pagers) {
    for (uint32_t layer = 0; layer < n_layers; ++layer) {
      const mp_pager_layer_stats s = pager->layer_stats(layer);
      out.hits[layer] += s.hits;
      out.misses[layer] += s.misses;
    }
    out.bytes_read += pager->stats().bytes_read;
  }
  return out;
}

PagerDelta delta(const PagerCounters& before, const PagerCounters& after, uint64_t expert_bytes) {
  PagerDelta out;
  for (size_t layer = 0; layer < after.hits.size(); ++layer) {
    out.hits.push_back(after.hits[layer] - before.hits[layer]);
    out.misses.push_back(after.misses[layer] - before.misses[layer]);
    out.miss_bytes.push_back(out.misses.back() * expert_bytes);
  }
  out.bytes_read = after.bytes_read - before.bytes_read;
  return out;
}

double per_second(uint64_t n, double seconds) { return seconds > 0 ? double(n) / seconds : 0.0; }

}  // namespace

ServeEngine::ServeEngine(NamedProfile initial, std::unique_ptr<host::HostApi> host,
                         std::unique_ptr<host::Registry> registry, tokenizer::Tokenizer tok, ServeMetrics& metrics)
    : initial_(initial.profile),
      host_(std::move(host)),
      registry_(std::move(registry)),
      tok_(std::move(tok)),
      metrics_(metrics),
      current_(std::move(initial)) {
  resolved_ = std::make_unique<cli::ResolvedStack>(cli::resolve_stack(*registry_, current_.profile));
  loaded_ = std::make_unique<ServedStack>(*resolved_, current_.profile, host_->get());
  publish_profile();
}

ServeEngine::~ServeEngine() = default;

std::string ServeEngine::profile_name() const {
  std::lock_guard lock(name_mutex_);
  return name_;
}

void ServeEngine::publish_profile() {
  const mp_expert_catalog& catalog = loaded_->catalog();
  expert_payload_bytes_ = 0;
  for (uint32_t p = 0; p < catalog.n_parts; ++p) expert_payload_bytes_ += catalog.part_bytes[p];
  max_positions_ = loaded_->info().max_positions;
  vocab_size_ = loaded_->info().vocab_size;
  {
    std::lock_guard lock(name_mutex_);
    name_ = current_.name;
  }
  metrics_.set_active_profile(current_.name, resolved_->pager.component->name(), resolved_->transport.component->name(),
                              loaded_->ranks());
  serving_ = true;
}

void ServeEngine::generate(const GenerationJob& job, GenerationChannel& channel) {
  if (!loaded_) {
    channel.fail("no profile is loaded (a failed swap could not restore the previous one)");
    return;
  }
  const mp_model_info& info = loaded_->info();
  const std::string profile = current_.name;
  const PagerCounters before = read_counters(loaded_->pagers(), info.n_layers);

  tokenizer::StreamDecoder text(tok_);
  StopMatcher stops(job.stop);
  cli::GenerationTimes times;
  bool cancelled = false;
  std::vector<int32_t> ids;
  try {
    ids = cli::generate(
        loaded_->forward(), info, job.prompt, job.settings,
        [&](int32_t id) {
          // Checked before the next forward: a client that left costs at most one token.
          if (channel.cancelled()) {
            cancelled = true;
            return false;
          }
          channel.send_text(stops.push(text.push(id)));
          return !stops.matched();
        },
        times);
  } catch (const std::exception& e) {
    host::logger("serve")->error("generation failed on profile {}: {}", profile, e.what());
    metrics_.record_request({job.endpoint, profile, "error", uint32_t(job.prompt.size()), 0, 0, 0});
    channel.fail(e.what());
    return;
  }
  if (!stops.matched() && !cancelled) {
    channel.send_text(stops.push(text.finish()));
    channel.send_text(stops.flush());
  }
  const bool ended_by_model = !ids.empty() && ids.back() == info.eos_token;
  GenerationOutcome outcome;
  outcome.finish_reason = cancelled ? "cancelled" : (stops.matched() || ended_by_model) ? "stop" : "length";
  outcome.prompt_tokens = uint32_t(job.prompt.size());
  outcome.completion_tokens = uint32_t(ids.size());
  outcome.token_ids = std::move(ids);
  outcome.profile = profile;

  metrics_.record_pager(profile, delta(before, read_counters(loaded_->pagers(), info.n_layers), expert_payload_bytes_));
  metrics_.record_request({job.endpoint, profile, outcome.finish_reason, outcome.prompt_tokens,
                           outcome.completion_tokens, per_second(job.prompt.size(), times.prefill_seconds),
                           per_second(times.decoded, times.decode_seconds)});
  channel.finish(std::move(outcome));
}

void ServeEngine::swap_profile(NamedProfile next) {
  const profile::Profile& now = current_.profile;
  if (std::filesystem::weakly_canonical(next.profile.model) != std::filesystem::weakly_canonical(now.model))
    throw ApiError(409,
                   "profile " + next.name + " names model " + next.profile.model.string() + " but " +
                       now.model.string() + " is being served; changing the model needs a restart",
                   "profile", "model_differs");
  if (next.profile.device != now.device)
    throw ApiError(409,
                   "profile " + next.name + " runs on device " + next.profile.device + " but the server runs on " +
                       now.device + "; changing the device needs a restart",
                   "profile", "device_differs");
  std::unique_ptr<cli::ResolvedStack> resolved;
  try {
    resolved = std::make_unique<cli::ResolvedStack>(cli::resolve_stack(*registry_, next.profile));
  } catch (const std::exception& e) {
    throw ApiError(400, e.what(), "profile", "invalid_profile");
  }
  // The old stack goes first: its memory is what the new pager's budget is checked against.
  serving_ = false;
  loaded_.reset();
  // Hand the freed pools back to the system now: glibc keeps freed heap memory for reuse, which
  // would leave the old budget resident beside the new one.
  malloc_trim(0);
  try {
    loaded_ = std::make_unique<ServedStack>(*resolved, next.profile, host_->get());
  } catch (const std::exception& e) {
    const std::string why = e.what();
    try {
      loaded_ = std::make_unique<ServedStack>(*resolved_, current_.profile, host_->get());
    } catch (const std::exception& again) {
      throw ApiError(500, "profile " + next.name + " cannot be loaded: " + why + "; rebuilding profile " +
                              current_.name + " failed too: " + again.what());
    }
    publish_profile();
    throw ApiError(
        422, "profile " + next.name + " cannot be loaded: " + why + " (profile " + current_.name + " still serves)",
        "profile", "profile_load_failed");
  }
  resolved_ = std::move(resolved);
  current_ = std::move(next);
  publish_profile();
}

}  // namespace moepage::serve
