#include "serve/http_routes.hpp"

#include <chrono>
#include <ctime>
#include <exception>
#include <memory>

#include "host/log.hpp"
#include "serve/admin_request.hpp"
#include "serve/openai_json.hpp"

namespace moepage::serve {
namespace {
using nlohmann::json;

constexpr auto kStreamPoll = std::chrono::milliseconds(50);  // how often a quiet stream checks its client

std::string dump(const json& body) { return body.dump(-1, ' ', false, json::error_handler_t::replace); }

void send_json(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(dump(body), "application/json");
}

// The ids the worker runs: the text through the tokenizer, or the ids as given.
std::vector<int32_t> prompt_ids(const CompletionRequest& r, const ServeEngine& engine, ChatFormat format) {
  const tokenizer::Tokenizer& tok = engine.tokenizer();
  if (r.endpoint == Endpoint::chat) return tok.encode(render_chat(format, r.messages), tokenizer_adds_bos(format));
  if (r.prompt_ids) {
    for (int32_t id : *r.prompt_ids) {
      if (uint32_t(id) >= engine.vocab_size())
        throw bad_field("prompt", "holds token id " + std::to_string(id) + ", outside the vocabulary (0 to " +
                                      std::to_string(engine.vocab_size() - 1) + ")");
    }
    return *r.prompt_ids;
  }
  // Like `moepage run --prompt`: the tokenizer's own special tokens (its BOS) are added.
  return tok.encode(*r.prompt_text, /*add_special_tokens=*/true);
}

// State of one streamed response, shared by httplib's copies of the content provider.
struct StreamState {
  std::shared_ptr<GenerationChannel> channel;
  ResponseMeta meta;
  std::shared_ptr<void> slot;  // the connection slot, held until the stream ends
  bool first = true;
};

}  // namespace

HttpRoutes::HttpRoutes(ServeEngine& engine, RequestQueue& queue, ServeMetrics& metrics, ServeOptions options)
    : engine_(engine),
      queue_(queue),
      metrics_(metrics),
      options_(std::move(options)),
      connections_(options_.max_connections),
      started_(int64_t(std::time(nullptr))) {}

void HttpRoutes::send_error(httplib::Response& res, const ApiError& e) {
  metrics_.record_error(e.status());
  send_json(res, e.status(), e.body());
}

template <typename Handler>
void HttpRoutes::answer(httplib::Response& res, Handler&& handler) {
  try {
    handler();
  } catch (const ApiError& e) {
    send_error(res, e);
  } catch (const std::exception& e) {
    host::logger("serve")->error("request failed: {}", e.what());
    send_error(res, ApiError(500, e.what()));
  }
}

void HttpRoutes::require_key(const httplib::Request& req) const {
  if (!options_.api_key) return;
  const std::string given = req.get_header_value("Authorization");
  const std::string expected = "Bearer " + *options_.api_key;
  // Compare every byte whatever the first difference, so timing does not reveal the key.
  unsigned diff = given.size() != expected.size();
  for (size_t i = 0; i < expected.size(); ++i) diff |= unsigned(i < given.size() ? given[i] ^ expected[i] : 1);
  if (diff != 0)
    throw ApiError(
        401,
        given.empty() ? "missing API key: send Authorization: Bearer KEY" : "wrong API key in the Authorization header",
        {}, "invalid_api_key");
}

void HttpRoutes::completions(const httplib::Request& req, httplib::Response& res, Endpoint endpoint) {
  std::shared_ptr<void> slot = connections_.acquire();
  require_key(req);
  const CompletionRequest r = parse_completion_request(req.body, endpoint, options_.max_tokens_limit);
  if (r.model && *r.model != options_.model_id)
    throw ApiError(404, "the model '" + *r.model + "' does not exist; this server serves '" + options_.model_id + "'",
                   "model", "model_not_found");

  GenerationJob job;
  job.prompt = prompt_ids(r, engine_, options_.chat_format);
  if (job.prompt.empty()) throw bad_field(endpoint == Endpoint::chat ? "messages" : "prompt", "encodes to no tokens");
  const profile::GenerateSettings& defaults = engine_.initial_profile().generate;
  job.settings.max_tokens = r.max_tokens.value_or(std::min(defaults.max_tokens, options_.max_tokens_limit));
  job.settings.temperature = r.temperature.value_or(defaults.temperature);
  job.settings.top_p = r.top_p.value_or(defaults.top_p);
  job.settings.top_k = r.top_k.value_or(defaults.top_k);
  job.settings.seed = r.seed.value_or(defaults.seed);
  job.stop = r.stop;
  job.endpoint = endpoint == Endpoint::chat ? "chat.completions" : "completions";
  const uint64_t context = engine_.max_positions();
  if (context > 0 && job.prompt.size() + job.settings.max_tokens > context)
    throw ApiError(400,
                   "the prompt is " + std::to_string(job.prompt.size()) + " tokens and max_tokens is " +
                       std::to_string(job.settings.max_tokens) + ", but the context holds " + std::to_string(context) +
                       " positions",
                   endpoint == Endpoint::chat ? "messages" : "prompt", "context_length_exceeded");

  ResponseMeta meta{endpoint, (endpoint == Endpoint::chat ? "chatcmpl-" : "cmpl-") + std::to_string(next_id_++),
                    int64_t(std::time(nullptr)), options_.model_id};
  std::shared_ptr<GenerationChannel> channel = queue_.submit(std::move(job));
  if (!r.stream) {
    const std::string text = channel->take_all();
    if (channel->error()) throw ApiError(500, "generation failed: " + *channel->error(), {}, "engine_error");
    send_json(res, 200, whole_response(meta, text, channel->outcome()));
    return;
  }
  auto state = std::make_shared<StreamState>(StreamState{channel, meta, std::move(slot)});
  {
    std::lock_guard lock(streams_mutex_);
    ++open_streams_;
  }
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider(
      "text/event-stream",
      [state](size_t, httplib::DataSink& sink) {
        GenerationChannel& ch = *state->channel;
        const GenerationChannel::Update u = ch.take(kStreamPoll);
        // A client that went away cancels its generation (the worker stops before its next forward).
        if (!sink.is_writable()) {
          ch.cancel();
          return false;
        }
        std::string out;
        if (!u.text.empty() || (state->first && u.ended)) {
          out += sse_event(text_chunk(state->meta, u.text, state->first));
          state->first = false;
        }
        if (u.ended) {
          state->slot.reset();  // free before the client can see the end and send its next request
          if (ch.error())
            out += sse_event(ApiError(500, "generation failed: " + *ch.error(), {}, "engine_error").body());
          else out += sse_event(final_chunk(state->meta, ch.outcome()));
          out += kSseDone;
        }
        if (!out.empty() && !sink.write(out.data(), out.size())) {
          ch.cancel();
          return false;
        }
        if (u.ended) sink.done();
        return true;
      },
      // httplib calls this once the stream has ended, written in full or not.
      [this, state](bool success) {
        if (!success) state->channel->cancel();
        state->slot.reset();
        std::lock_guard lock(streams_mutex_);
        --open_streams_;
        streams_ended_.notify_all();
      });
}

void HttpRoutes::wait_for_streams() {
  std::unique_lock lock(streams_mutex_);
  streams_ended_.wait(lock, [&] { return open_streams_ == 0; });
}

void HttpRoutes::admin_profile(const httplib::Request& req, httplib::Response& res) {
  if (!options_.api_key)
    throw ApiError(403, "profile swaps need the server to be started with --api-key", {}, "admin_disabled");
  require_key(req);
  NamedProfile next = parse_admin_profile_request(req.body, engine_.initial_profile().model);
  const std::string name = next.name;
  queue_.swap(std::move(next));
  host::logger("serve")->info("now serving profile {}", name);
  send_json(res, 200, {{"profile", engine_.profile_name()}, {"status", "swapped"}});
}

void HttpRoutes::install(httplib::Server& server) {
  server.set_payload_max_length(options_.max_body_bytes);
  // Errors httplib answers by itself (unknown route, body too large, bad request line) get the
  // same JSON shape as the API's own; responses that already have a body keep it.
  server.set_error_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    std::string message = "request failed";
    if (res.status == 404) message = "no such route";
    if (res.status == 413)
      message = "the request body is larger than the limit of " + std::to_string(options_.max_body_bytes) + " bytes";
    // httplib caps form-encoded bodies (what `curl -d` sends by default) at 8 KiB whatever the limit.
    if (res.status == 413 && req.get_header_value("Content-Type") == "application/x-www-form-urlencoded")
      message += " (or 8 KiB for a form-encoded body: send Content-Type: application/json)";
    if (res.status == 405) message = "method not allowed on this route";
    send_error(res, ApiError(res.status, message));
  });
  server.Post("/v1/completions", [this](const httplib::Request& req, httplib::Response& res) {
    answer(res, [&] { completions(req, res, Endpoint::completions); });
  });
  server.Post("/v1/chat/completions", [this](const httplib::Request& req, httplib::Response& res) {
    answer(res, [&] { completions(req, res, Endpoint::chat); });
  });
  server.Get("/v1/models", [this](const httplib::Request& req, httplib::Response& res) {
    answer(res, [&] {
      require_key(req);
      send_json(
          res, 200,
          {{"object", "list"},
           {"data",
            json::array(
                {{{"id", options_.model_id}, {"object", "model"}, {"created", started_}, {"owned_by", "moepage"}}})}});
    });
  });
  server.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
    const bool ok = engine_.serving() && !draining_;
    send_json(res, ok ? 200 : 503,
              {{"status", draining_ ? "draining"
                          : ok      ? "ok"
                                    : "no profile loaded"},
               {"profile", engine_.profile_name()}});
  });
  server.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(metrics_.text(), "text/plain; version=0.0.4; charset=utf-8");
  });
  server.Post("/admin/profile", [this](const httplib::Request& req, httplib::Response& res) {
    answer(res, [&] { admin_profile(req, res); });
  });
}

}  // namespace moepage::serve
