// `moepage serve`: loads a profile once and answers OpenAI-compatible HTTP requests with it
// (routes in http_routes.hpp). SIGTERM or SIGINT lets everything already accepted finish, then
// the process exits 0.
#include <pthread.h>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>

#include "cli/cli_common.hpp"
#include "cli/commands.hpp"
#include "cli/plugin_stack_loading.hpp"
#include "host/host_api.hpp"
#include "host/log.hpp"
#include "host/registry.hpp"
#include "profile/profile.hpp"
#include "profile/yaml_quote.hpp"
#include "serve/http_routes.hpp"
#include "serve/request_queue.hpp"
#include "serve/serve_engine.hpp"
#include "serve/serve_metrics.hpp"
#include "serve/serve_options.hpp"
#include "units/byte_size.hpp"

namespace moepage::cli {
namespace po = boost::program_options;
namespace {

// A positive count given on the command line.
size_t positive(const po::variables_map& vm, const char* flag, size_t fallback, size_t most) {
  if (!vm.count(flag)) return fallback;
  const int64_t v = vm[flag].as<int64_t>();
  if (v < 1 || uint64_t(v) > most)
    throw UsageError("--" + std::string(flag) + " must be 1 to " + std::to_string(most) + ", got " + std::to_string(v));
  return size_t(v);
}

std::optional<std::string> api_key(const po::variables_map& vm) {
  if (vm.count("api-key") && vm.count("api-key-file")) throw UsageError("give --api-key or --api-key-file, not both");
  if (vm.count("api-key")) return vm["api-key"].as<std::string>();
  if (!vm.count("api-key-file")) return std::nullopt;
  const std::string path = vm["api-key-file"].as<std::string>();
  std::ifstream in(path);
  std::string key;
  if (!in || !std::getline(in, key)) throw std::runtime_error("--api-key-file: cannot read a key from " + path);
  if (key.empty()) throw std::runtime_error("--api-key-file: the first line of " + path + " is empty");
  return key;
}

serve::ServeOptions serve_options(const po::variables_map& vm, const profile::Profile& prof,
                                  const tokenizer::Tokenizer& tok) {
  serve::ServeOptions o;
  o.host = vm["host"].as<std::string>();
  const int64_t port = vm["port"].as<int64_t>();
  if (port < 0 || port > 65535) throw UsageError("--port must be 0 to 65535, got " + std::to_string(port));
  o.port = int(port);
  o.api_key = api_key(vm);
  o.model_id = vm.count("model-name") ? vm["model-name"].as<std::string>() : prof.model.filename().string();
  const std::string format = vm["chat-format"].as<std::string>();
  if (format == "auto") {
    o.chat_format = serve::detect_chat_format(&tok);
  } else if (const auto named = serve::chat_format_from_name(format)) {
    o.chat_format = *named;
  } else {
    throw UsageError("--chat-format must be auto, deepseek-v4 or plain, got '" + format + "'");
  }
  const std::string body = vm["max-body"].as<std::string>();
  const std::optional<uint64_t> body_bytes = units::parse_size(body);
  if (!body_bytes || *body_bytes == 0) throw UsageError("--max-body: '" + body + "' is not a size, e.g. 1MiB");
  o.max_body_bytes = size_t(*body_bytes);
  o.max_tokens_limit = uint32_t(positive(vm, "max-tokens-limit", o.max_tokens_limit, 1u << 24));
  o.max_connections = positive(vm, "max-connections", o.max_connections, 4096);
  o.max_queue = positive(vm, "max-queue", o.max_queue, 1u << 20);
  return o;
}

CommandSpec serve_spec() {
  CommandSpec spec;
  spec.usage = "moepage serve --profile P [--model DIR] [--host 127.0.0.1] [--port 8080] [--api-key KEY] [options]";
  spec.summary =
      "Loads profile P once and serves OpenAI-compatible HTTP: POST /v1/completions and /v1/chat/completions\n"
      "(whole or streamed as server-sent events), GET /v1/models, /health, /metrics (Prometheus text), and\n"
      "POST /admin/profile to swap the profile without a restart (needs --api-key). Requests run one at a time\n"
      "in arrival order. SIGTERM lets accepted requests finish, then exits 0.";
  spec.options.add_options()("profile,p", po::value<std::string>()->required()->value_name("P"),
                             "the YAML profile to serve")("model", po::value<std::string>()->value_name("DIR"),
                                                          "the checkpoint folder (overrides model:)")(
      "set", po::value<std::vector<std::string>>()->composing()->value_name("K=V"),
      "override one profile key, e.g. pager.budget=8GiB (repeatable)")(
      "plugin-dir", po::value<std::vector<std::string>>()->composing()->value_name("DIR"),
      "a folder to search for plugins first (repeatable)")(
      "host", po::value<std::string>()->default_value("127.0.0.1")->value_name("ADDR"),
      "address to listen on (loopback unless told otherwise; 0.0.0.0 for every interface)")(
      "port", po::value<int64_t>()->default_value(8080)->value_name("N"), "port to listen on (0: any free port)")(
      "api-key", po::value<std::string>()->value_name("KEY"),
      "require Authorization: Bearer KEY on /v1 and /admin routes")(
      "api-key-file", po::value<std::string>()->value_name("FILE"), "the same, the key read from FILE's first line")(
      "model-name", po::value<std::string>()->value_name("ID"),
      "the model id clients use (default: the model folder's name)")(
      "chat-format", po::value<std::string>()->default_value("auto")->value_name("F"),
      "auto | deepseek-v4 | plain (auto: deepseek-v4 when the tokenizer has its role tokens)")(
      "max-body", po::value<std::string>()->default_value("1MiB")->value_name("SIZE"), "largest request body")(
      "max-tokens-limit", po::value<int64_t>()->value_name("N"), "largest max_tokens a request may ask (default 4096)")(
      "max-connections", po::value<int64_t>()->value_name("N"),
      "requests handled at once; more get a 429 (default 16)")(
      "max-queue", po::value<int64_t>()->value_name("N"),
      "generations waiting for the engine; more get a 429 (default 64)");
  return spec;
}

// Every thread started after this (the engine's, httplib's) leaves SIGTERM and SIGINT to the one
// thread that waits for them; a client gone mid-write must not kill the process.
sigset_t block_stop_signals() {
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);
  return stop_signals;
}

// Takes the port (any free one for 0) and returns it.
int bind_port(httplib::Server& server, const serve::ServeOptions& options) {
  const int port = options.port == 0 ? server.bind_to_any_port(options.host)
                                     : (server.bind_to_port(options.host, options.port) ? options.port : -1);
  if (port < 0)
    throw std::runtime_error("cannot listen on " + options.host + ":" + std::to_string(options.port) +
                             " (in use, or not an address of this machine)");
  return port;
}

}  // namespace

int cmd_serve(int argc, char** argv) {
  CommandSpec spec = serve_spec();
  auto vm = parse_command(spec, argc, argv);
  if (!vm) return kExitOk;

  std::vector<profile::Override> overrides;
  for (const std::string& assignment : strings_of(*vm, "set")) overrides.push_back({assignment, ""});
  if (vm->count("model")) {
    const std::string dir = (*vm)["model"].as<std::string>();
    overrides.push_back({"model=" + profile::yaml_quote(dir), "--model " + dir});
  }
  profile::Profile prof = profile::load_profile((*vm)["profile"].as<std::string>(), overrides);
  if (!log_level_set_by_command_line())
    host::set_log_level(log_level_from_name(prof.log_level, prof.source.string() + ": log.level"));
  auto log = host::logger("serve");

  auto host = std::make_unique<host::HostApi>(make_device_service(prof.device, prof.source.string() + ": device"));
  require_model_folder(prof);
  std::optional<tokenizer::Tokenizer> tok = load_model_tokenizer(prof.model);
  if (!tok)
    throw std::runtime_error("serve needs the model's tokenizer: " + (prof.model / "tokenizer.json").string() +
                             " does not exist");
  const serve::ServeOptions options = serve_options(*vm, prof, *tok);
  auto registry = std::make_unique<host::Registry>(host->get());
  registry->scan(host::default_discovery_dirs(strings_of(*vm, "plugin-dir")));

  const sigset_t stop_signals = block_stop_signals();

  // The port is taken before the model loads, so a busy port fails at once; connections made
  // while loading wait in the listen backlog.
  httplib::Server server;
  const int port = bind_port(server, options);

  serve::ServeMetrics metrics;
  const std::string profile_name = prof.source.stem().string();
  serve::ServeEngine engine({prof, profile_name}, std::move(host), std::move(registry), std::move(*tok), metrics);
  serve::RequestQueue queue(engine, metrics, options.max_queue);
  serve::HttpRoutes routes(engine, queue, metrics, options);
  // A few threads beyond the connection cap, so refusals are answered while every slot is busy.
  const size_t threads = options.max_connections + 4;
  server.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  server.set_keep_alive_timeout(2);  // idle keep-alive connections hold a thread; free them soon
  routes.install(server);

  std::cout << "moepage serve: listening on http://" << options.host << ":" << port << " (model " << options.model_id
            << ", profile " << profile_name << ", chat format " << serve::chat_format_name(options.chat_format) << ")"
            << std::endl;

  std::thread stopper([&] {
    int signal = 0;
    sigwait(&stop_signals, &signal);
    log->info("{}: finishing accepted requests, then exiting", signal == SIGTERM ? "SIGTERM" : "SIGINT");
    routes.set_draining();
    queue.drain();
    routes.wait_for_streams();
    server.stop();
  });
  const bool listened = server.listen_after_bind();
  if (!listened) {  // not stopped by the signal thread: wake it so it can be joined
    routes.set_draining();
    kill(getpid(), SIGTERM);
  }
  stopper.join();
  log->info("stopped");
  return listened ? kExitOk : kExitError;
}

}  // namespace moepage::cli
