// Pager checks of failed reads: an expert past the end of its file, and a read the transport
// fails with a status of its own. A pager keeps the transport's status (status.h), names the
// file and offset of the read that failed (since 1.4 from the request the transport reports,
// not from parsing its message), and reads again on the next access (fail closed).
#include <map>
#include <mutex>

#include "conform/pager_fixture.hpp"
#include "moepage/cpp/structs.hpp"
#include "moepage/cpp/ticket.hpp"

namespace moepage::conform {
namespace {

// A transport instance that forwards to a real one, but fails the first ticket holding a demand
// read, once: the reads run, then wait/poll return MP_ERR_DEVICE naming the ticket's last request
// as the failed one. Its message names no file and no offset.
class FailingTransport {
 public:
  explicit FailingTransport(mp_transport_ref inner) : inner_(inner) {
    v_ = *inner.vtable;
    v_.struct_size = sizeof v_;
    v_.create = nullptr;  // a pager never creates or destroys its transport
    v_.destroy = nullptr;
    v_.last_error = [](void* self) { return failed_here() ? kMessage : of(self).call_inner_error(); };
    v_.open = [](void* self, const char* path, uint32_t* file) { return of(self).open(path, file); };
    v_.submit = [](void* self, const mp_read_request* r, uint32_t n, mp_ticket* t) { return of(self).submit(r, n, t); };
    v_.wait = [](void* self, mp_ticket t) { return of(self).report(t, false, nullptr); };
    v_.poll = [](void* self, mp_ticket t) { return of(self).report(t, true, nullptr); };
    v_.wait_result = [](void* self, mp_ticket t, mp_ticket_result* out) { return of(self).report(t, false, out); };
    v_.poll_result = [](void* self, mp_ticket t, mp_ticket_result* out) { return of(self).report(t, true, out); };
    v_.stats = [](void* self, mp_transport_stats* out) {
      return of(self).inner_.vtable->stats(of(self).inner_.self, out);
    };
    v_.ticket_event = nullptr;  // the pager waits, and so sees the failure
  }
  mp_transport_ref ref() { return mp_transport_ref{sizeof(mp_transport_ref), &v_, this}; }
  bool fired() const { return fired_; }
  const mp_read_request& failed() const { return failed_; }
  std::string failed_file() const { return paths_.at(failed_.file); }

  static constexpr const char* kMessage = "conform: injected device failure";

 private:
  static FailingTransport& of(void* self) { return *static_cast<FailingTransport*>(self); }
  static bool& failed_here() {  // the calling thread's last call failed by injection
    thread_local bool failed = false;
    return failed;
  }
  const char* call_inner_error() const { return inner_.vtable->last_error(inner_.self); }

  mp_status open(const char* path, uint32_t* file) {
    failed_here() = false;
    const mp_status s = inner_.vtable->open(inner_.self, path, file);
    std::lock_guard lock(mutex_);
    if (s == MP_OK) paths_[*file] = path;
    return s;
  }
  mp_status submit(const mp_read_request* r, uint32_t n, mp_ticket* ticket) {
    failed_here() = false;
    const mp_status s = inner_.vtable->submit(inner_.self, r, n, ticket);
    if (s != MP_OK || n == 0) return s;
    const mp::VersionedArray<mp_read_request> batch(r, n, "conform");
    bool demand = false;
    for (uint32_t i = 0; i < n; ++i) demand = demand || batch[i].priority == MP_READ_DEMAND;
    std::lock_guard lock(mutex_);
    if (demand && !fired_) {
      fired_ = true;
      doomed_ = *ticket;
      failed_ = batch[n - 1];
      failed_index_ = n - 1;
    }
    return s;
  }
  mp_status report(mp_ticket ticket, bool poll, mp_ticket_result* out) {
    failed_here() = false;
    mp_ticket_result r = mp::no_failed_request();
    const mp_status s = mp::report_ticket(inner_.vtable, inner_.self, ticket, poll, r);
    std::lock_guard lock(mutex_);
    if (s == MP_OK && ticket == doomed_) {
      doomed_ = 0;
      r.failed_request = failed_index_;
      r.failed_tag = failed_.tag;
      r.failed_count = 1;
      if (out != nullptr) mp_write_struct(out, &r, sizeof r);
      failed_here() = true;
      return MP_ERR_DEVICE;
    }
    if (out != nullptr) mp_write_struct(out, &r, sizeof r);
    return s;
  }

  mp_transport_ref inner_;
  mp_transport_vtable v_{};
  std::mutex mutex_;
  std::map<uint32_t, std::string> paths_;
  bool fired_ = false;
  mp_ticket doomed_ = 0;
  mp_read_request failed_{};
  uint32_t failed_index_ = 0;
};

void expect_named(const mp::PluginError& e, const FailingTransport& t, bool naming) {
  const std::string message = e.what();
  expect(e.status() == MP_ERR_DEVICE, "the transport failed with device, the pager with " +
                                          std::string(mp_status_name(e.status())) + ": " + message);
  if (!naming) return;
  expect(message.find(t.failed_file()) != std::string::npos &&
             message.find(std::to_string(t.failed().offset)) != std::string::npos,
         "the error does not name the read the transport reported (" + t.failed_file() + " at offset " +
             std::to_string(t.failed().offset) + "): " + message);
}

// Fails one demand ticket (at create for a pager that reads everything then, else at the next
// acquire), checks the error, then checks the next acquire reads again.
void injected_failure(PagerContext& ctx, bool naming, bool split = false) {
  profile::ResolvedOptions options = resolve_options(*ctx.transport.descriptor, ConformConfig{});
  mp::TransportHandle real =
      mp::TransportHandle::create(*ctx.transport.descriptor, ctx.transport.library, ctx.host, options.c_options());
  FailingTransport failing(real.ref());
  const mp_transport_ref through = failing.ref();
  std::unique_ptr<Stack> s;
  try {
    s = ctx.make_stack(nullptr, &through);
  } catch (const mp::PluginError& e) {
    expect(failing.fired(), "create failed before any read: " + std::string(e.what()));
    return expect_named(e, failing, naming);
  }
  const std::vector<int32_t> experts = ctx.random_experts(kTopK);
  const mp::PluginError e =
      expect_failure<mp::PluginError>([&] { ctx.acquire_and_verify(s->pager, 2, experts, nullptr, split); },
                                      "an acquire whose read the transport failed");
  expect(failing.fired(), "the acquire failed before any read: " + std::string(e.what()));
  expect_named(e, failing, naming);
  ctx.acquire_and_verify(s->pager, 2, experts, nullptr, split);  // read again: the failed slots were not kept
}

void split_names_reported_request(PagerContext& ctx) {
  if (ctx.offers_split()) injected_failure(ctx, true, true);
}

void keeps_status(PagerContext& ctx) { injected_failure(ctx, false); }
void names_reported_request(PagerContext& ctx) { injected_failure(ctx, true); }

// An expert whose bytes lie past the end of its file fails naming the file, twice (the slot is
// never valid), while its neighbours still load; through plain acquire or the split acquire.
void truncated_expert_through(PagerContext& ctx, bool split) {
  const int32_t broken = 5;
  const SyntheticCatalog truncated(ctx.file_a, ctx.file_b, broken);
  const std::string& path = truncated.file(static_cast<uint32_t>(broken) % 2);
  std::unique_ptr<Stack> s;
  try {
    s = ctx.make_stack(&truncated);
  } catch (const mp::PluginError& e) {
    // A pager that reads every expert at load reports the broken one there.
    expect(std::string(e.what()).find(path) != std::string::npos,
           "create failed without naming the file: " + std::string(e.what()));
    return;
  }
  // The split acquire also asks for a good expert beside the broken one.
  const std::vector<int32_t> request = split ? std::vector<int32_t>{broken, broken + 2} : std::vector<int32_t>{broken};
  for (int attempt = 0; attempt < 2; ++attempt) {
    const mp::PluginError e =
        expect_failure<mp::PluginError>([&] { ctx.acquire_and_verify(s->pager, 1, request, &truncated, split); },
                                        std::string(split ? "a split acquire of" : "acquiring") +
                                            " the truncated expert (attempt " + std::to_string(attempt + 1) + ")");
    expect(std::string(e.what()).find(path) != std::string::npos,
           "the error does not name the file: " + std::string(e.what()));
  }
  ctx.acquire_and_verify(s->pager, 1, {broken + 1}, &truncated, split);  // its neighbours still work
}

void truncated_expert(PagerContext& ctx) { truncated_expert_through(ctx, false); }

void split_truncated_expert(PagerContext& ctx) {
  if (ctx.offers_split()) truncated_expert_through(ctx, true);
}

}  // namespace

std::vector<PagerCheck> pager_failure_checks() {
  return {
      {"an expert whose bytes lie past the end of its file fails naming the file, and fails again", &truncated_expert},
      {"a read the transport fails with device fails with device too, and the next access reads again", &keeps_status,
       4},
      {"a failed read is named by the request the transport reports (its file and offset; ABI 1.4)",
       &names_reported_request, 4},
      {"a split acquire whose read the transport fails fails at acquire_finish naming that read, and the next "
       "access reads again (ABI 1.5, when offered)",
       &split_names_reported_request, 5},
      {"a split acquire of an expert past the end of its file fails naming the file, and fails again (ABI 1.5, "
       "when offered)",
       &split_truncated_expert, 5},
  };
}

}  // namespace moepage::conform
