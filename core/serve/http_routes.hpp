// The HTTP API on cpp-httplib: the routes, the key check, the limits and the OpenAI-shaped errors.
//   POST /v1/completions, POST /v1/chat/completions   whole or streamed (server-sent events)
//   GET /v1/models, GET /health, GET /metrics (Prometheus text)
//   POST /admin/profile                               swap the serving profile (needs the key)
#pragma once
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <string>

#include <httplib.h>

#include "serve/completion_request.hpp"
#include "serve/connection_limit.hpp"
#include "serve/request_queue.hpp"
#include "serve/serve_engine.hpp"
#include "serve/serve_metrics.hpp"
#include "serve/serve_options.hpp"

namespace moepage::serve {

class HttpRoutes {
 public:
  HttpRoutes(ServeEngine& engine, RequestQueue& queue, ServeMetrics& metrics, ServeOptions options);
  // Registers every route, the error handler and the body limit on `server`.
  void install(httplib::Server& server);
  // From now on /health says so and new generations get a 503 (the queue refuses them).
  void set_draining() { draining_ = true; }
  // Returns once every stream has written its last event: httplib's stop() cuts streams short.
  void wait_for_streams();

 private:
  void completions(const httplib::Request& req, httplib::Response& res, Endpoint endpoint);
  void admin_profile(const httplib::Request& req, httplib::Response& res);
  void require_key(const httplib::Request& req) const;
  // Runs `handler`, answering an ApiError (or any other exception, as a 500) in OpenAI's shape.
  template <typename Handler>
  void answer(httplib::Response& res, Handler&& handler);
  void send_error(httplib::Response& res, const ApiError& e);

  ServeEngine& engine_;
  RequestQueue& queue_;
  ServeMetrics& metrics_;
  ServeOptions options_;
  ConnectionLimit connections_;
  std::atomic<bool> draining_{false};
  std::mutex streams_mutex_;
  std::condition_variable streams_ended_;
  size_t open_streams_ = 0;
  std::atomic<uint64_t> next_id_{1};
  int64_t started_ = 0;
};

}  // namespace moepage::serve
