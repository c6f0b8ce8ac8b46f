// Transport checks of the small rules transport.h writes down: file handles, zero-length reads,
// reads past the end, messages per thread, and what MP_CAP_ASYNC promises.
#include <thread>

#include "conform/transport_fixture.hpp"

namespace moepage::conform {
namespace {

void missing_file(TransportContext& ctx) {
  mp::TransportHandle t = ctx.make();
  const std::string missing = (ctx.file.folder() / "no-such-file.safetensors").string();
  const mp::PluginError e = expect_plugin_failure([&] { t.open(missing); }, "opening " + missing);
  expect(std::string(e.what()).find(missing) != std::string::npos,
         "the message does not name the file: " + std::string(e.what()));
}

// Handle 0 is an ordinary handle: before any open() it names no file, like any other number.
void unknown_handles(TransportContext& ctx) {
  mp::TransportHandle fresh = ctx.make();
  std::vector<Read> reads;
  reads.emplace_back(0, 16, 0);
  mp::PluginError e = expect_plugin_failure([&] { submit(fresh, reads, 0); }, "file handle 0 before any open()");
  expect(e.status() == MP_ERR_INVALID_ARG,
         "handle 0 before open(): status " + std::string(mp_status_name(e.status())) + ", expected invalid-arg");
  uint32_t f = 0;
  mp::TransportHandle t = ctx.make_open(f);
  e = expect_plugin_failure([&] { submit(t, reads, f + 9999); }, "a request for a file handle never returned");
  expect(e.status() == MP_ERR_INVALID_ARG,
         "status " + std::string(mp_status_name(e.status())) + ", expected invalid-arg");
}

void zero_length(TransportContext& ctx) {
  uint32_t f = 0;
  mp::TransportHandle t = ctx.make_open(f);
  std::vector<Read> reads;
  reads.emplace_back(10, 0, 3);
  reads.emplace_back(kTransportFileBytes, 0, 0);  // zero bytes at the very end
  std::vector<mp_read_request> requests;
  for (Read& r : reads) requests.push_back(r.request(f));
  if (ctx.component.abi_minor >= 4) {  // written down in 1.4
    mp_read_request nothing = reads[0].request(f);
    nothing.dst = nullptr;                         // a zero-length request never touches dst
    nothing.offset = kTransportFileBytes + 12345;  // and reads nothing, wherever it points
    requests.push_back(nothing);
  }
  t.wait(t.submit(requests));
  verify_all(reads, ctx.file, "zero-length");
  t.wait(t.submit({}));
}

void past_the_end(TransportContext& ctx) {
  uint32_t f = 0;
  mp::TransportHandle t = ctx.make_open(f);
  const mp_transport_stats before = t.stats();
  for (const uint64_t start : {kTransportFileBytes - 100, kTransportFileBytes + 4096}) {
    std::vector<Read> reads;
    reads.emplace_back(start, 200, 0);
    const mp::PluginError e = expect_plugin_failure([&] { t.wait(submit(t, reads, f)); },
                                                    "a read at offset " + std::to_string(start) + " past the end");
    const std::string message = e.what();
    expect(e.status() != MP_OK && e.status() != MP_PENDING,
           "the failure has status " + std::string(mp_status_name(e.status())));
    expect(message.find(ctx.path) != std::string::npos, "the message does not name the file: " + message);
    if (ctx.component.abi_minor < 4) continue;  // 1.4 wrote down the status and the offset
    expect(e.status() == MP_ERR_IO,
           "the failure has status " + std::string(mp_status_name(e.status())) + ", expected io");
    expect(message.find(std::to_string(start)) != std::string::npos,
           "the message does not name offset " + std::to_string(start) + ": " + message);
  }
  const mp_transport_stats after = t.stats();
  expect(after.errors >= before.errors + 2,
         "stats.errors grew by " + std::to_string(after.errors - before.errors) + " after two failed reads");
  std::vector<Read> reads = ctx.reads(4, 4096);
  t.wait(submit(t, reads, f));
  verify_all(reads, ctx.file, "after a failure");
}

// last_error is per thread: four threads failing on one instance at once each read their own
// message (a per-instance message is replaced, or freed, by another thread's failure).
void messages_per_thread(TransportContext& ctx) {
  mp::TransportHandle t = ctx.make();
  std::vector<std::string> wrong(4);
  std::vector<std::thread> threads;
  for (int w = 0; w < 4; ++w) {
    threads.emplace_back([&, w] {
      for (int i = 0; i < 300 && wrong[size_t(w)].empty(); ++i) {
        const std::string mine =
            (ctx.file.folder() / ("missing-" + std::to_string(w) + "-" + std::to_string(i))).string();
        try {
          t.open(mine);
          wrong[size_t(w)] = "opening " + mine + " succeeded";
        } catch (const mp::PluginError& e) {
          if (std::string(e.what()).find(mine + ":") == std::string::npos && !std::string(e.what()).ends_with(mine))
            wrong[size_t(w)] = "thread " + std::to_string(w) + " failed opening " + mine + " but read: " + e.what();
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  for (const std::string& w : wrong) expect(w.empty(), w);
}

// Without MP_CAP_ASYNC, submit() has done every read when it returns.
void synchronous_submit(TransportContext& ctx) {
  uint32_t f = 0;
  mp::TransportHandle t = ctx.make_open(f);
  std::vector<Read> reads = ctx.reads(8, 256 * 1024);
  const mp_ticket ticket = submit(t, reads, f);
  expect(t.poll(ticket), "poll right after submit reports pending, but the transport does not declare MP_CAP_ASYNC");
  verify_all(reads, ctx.file, "synchronous");
}

bool not_async(const TransportContext& ctx) { return (ctx.capabilities() & MP_CAP_ASYNC) == 0; }

}  // namespace

std::vector<TransportCheck> transport_rule_checks() {
  return {
      {"opening a missing file fails with a status and a message naming the file", &missing_file},
      {"a request for a handle the instance never returned (0 before any open, too) is refused at submit",
       &unknown_handles},
      {"zero-length requests (NULL dst, any offset) and an empty batch complete with ok", &zero_length},
      {"reading past the end fails with io naming the file and offset, is counted, and the next read works",
       &past_the_end},
      {"four threads failing at once each read their own message from last_error", &messages_per_thread, 4},
      {"without MP_CAP_ASYNC, every read is done when submit returns", &synchronous_submit, 4, &not_async},
  };
}

}  // namespace moepage::conform
