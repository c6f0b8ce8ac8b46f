// moepage plugin SDK, host side: RAII handles over plugin instances.
//
// A handle owns one instance (destroy() runs in its destructor) and a type-erased keep-alive of
// the library that created it, released only after destroy() returned, so a library can never
// be unloaded under a live instance. Calls go through the vtable; optional and newer members are
// called only when they lie inside the vtable's struct_size and are non-null. A failing call
// throws mp::PluginError carrying the status and the instance's last_error() text.
//
//   auto t = mp::TransportHandle::create(descriptor, library_keep_alive, host, &options);
//   uint32_t f = t.open("/data/model.safetensors");
//   mp_ticket k = t.submit(requests);
//   t.wait(k);
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "moepage/cpp/error.hpp"
#include "moepage/cpp/structs.hpp"
#include "moepage/cpp/ticket.hpp"
#include "moepage/moepage.h"

namespace mp {

// A failed call into a plugin: the status it returned and the message it gave. It is an
// mp::Error, so code that passes statuses on treats it as any other failure with a status.
class PluginError : public Error {
 public:
  using Error::Error;
};

// A failed ticket: besides status and message, which request failed when the transport says so
// (ABI 1.4 wait_result/poll_result); failed_request is MP_NO_REQUEST otherwise.
class TicketError : public PluginError {
 public:
  TicketError(mp_status status, const std::string& message, const mp_ticket_result& result)
      : PluginError(status, message), result_(result) {}
  const mp_ticket_result& result() const noexcept { return result_; }

 private:
  mp_ticket_result result_;
};

inline const char* kind_name(int32_t kind) noexcept {
  switch (kind) {
    case MP_KIND_ARCH: return "arch";
    case MP_KIND_PAGER: return "pager";
    case MP_KIND_TRANSPORT: return "transport";
    default: return "unknown";
  }
}

namespace detail {

// Owns `self` and the library keep-alive; destroys the instance before releasing the library.
template <class Vtable>
class InstanceOwner {
 public:
  InstanceOwner() = default;
  InstanceOwner(const Vtable* vtable, void* self, std::shared_ptr<void> library, std::string label)
      : library_(std::move(library)), vtable_(vtable), self_(self), label_(std::move(label)) {}
  InstanceOwner(InstanceOwner&& o) noexcept { *this = std::move(o); }
  InstanceOwner& operator=(InstanceOwner&& o) noexcept {
    if (this != &o) {
      reset();
      library_ = std::move(o.library_);
      vtable_ = std::exchange(o.vtable_, nullptr);
      self_ = std::exchange(o.self_, nullptr);
      label_ = std::move(o.label_);
    }
    return *this;
  }
  InstanceOwner(const InstanceOwner&) = delete;
  InstanceOwner& operator=(const InstanceOwner&) = delete;
  ~InstanceOwner() { reset(); }

  // Destroys the instance, then lets go of the library (which may unload it).
  void reset() noexcept {
    if (self_ != nullptr && vtable_ != nullptr && vtable_->destroy != nullptr) vtable_->destroy(self_);
    self_ = nullptr;
    vtable_ = nullptr;
    library_.reset();
  }

  explicit operator bool() const noexcept { return self_ != nullptr; }
  const Vtable* vtable() const noexcept { return vtable_; }
  void* self() const noexcept { return self_; }
  const std::string& label() const noexcept { return label_; }

  // Throws PluginError for a failing status (MP_PENDING is not a failure).
  void check(mp_status s, const char* op) const {
    if (s == MP_OK || s == MP_PENDING) return;
    throw PluginError(s, failure(s, op));
  }
  // "<label>: <op> failed (<status>): <last_error>", read on the thread whose call failed.
  std::string failure(mp_status s, const char* op) const {
    const char* msg = (vtable_ != nullptr && vtable_->last_error != nullptr) ? vtable_->last_error(self_) : nullptr;
    return label_ + ": " + op + " failed (" + mp_status_name(s) +
           "): " + (msg != nullptr && *msg != '\0' ? msg : "no message");
  }
  void require_live(const char* op) const {
    if (self_ == nullptr) throw PluginError(MP_ERR_INVALID_ARG, label_ + ": " + op + " on an empty handle");
  }

 private:
  std::shared_ptr<void> library_;  // declared first: released last even without reset()
  const Vtable* vtable_ = nullptr;
  void* self_ = nullptr;
  std::string label_;
};

inline std::string label_of(const mp_component_descriptor& d) {
  return std::string(kind_name(d.kind)) + " '" + (d.name != nullptr ? d.name : "?") + "'";
}

[[noreturn]] inline void create_failed(const mp_component_descriptor& d, mp_status s, const char* err) {
  throw PluginError(s, label_of(d) + ": create failed (" + mp_status_name(s) +
                           "): " + (err != nullptr && *err != '\0' ? err : "no message"));
}

inline constexpr uint32_t kErrCap = 1024;

// What every handle shares: the instance it owns, made by the descriptor's create(), its label,
// emptiness and destruction.
template <class Vtable>
class Handle {
 public:
  const std::string& label() const noexcept { return o_.label(); }
  explicit operator bool() const noexcept { return static_cast<bool>(o_); }
  // Destroys the instance (for an architecture, not to be confused with reset_sequence, the ABI's
  // reset()).
  void reset() noexcept { o_.reset(); }

 protected:
  Handle() = default;
  // Checks that `d` is of `kind` with a vtable, then calls create(&self, err, err_cap); a failure
  // throws PluginError naming the component and carrying create's message.
  template <class Create>
  Handle(const mp_component_descriptor& d, int32_t kind, const Vtable* vtable, std::shared_ptr<void> library,
         Create&& create) {
    if (d.kind != kind || vtable == nullptr)
      throw PluginError(MP_ERR_INVALID_ARG,
                        label_of(d) + " is not " + (kind == MP_KIND_ARCH ? "an " : "a ") + kind_name(kind));
    char err[kErrCap] = {};
    void* self = nullptr;
    const mp_status s = create(&self, err, static_cast<uint32_t>(sizeof err));
    if (s != MP_OK || self == nullptr) create_failed(d, s == MP_OK ? MP_ERR_INTERNAL : s, err);
    o_ = InstanceOwner<Vtable>(vtable, self, std::move(library), label_of(d));
  }

  InstanceOwner<Vtable> o_;
};

}  // namespace detail

// The descriptor's option table as this host's structs, walked with the plugin's stride
// (host_api.h). Throws mp::Error naming the element whose struct_size breaks the stride.
inline std::vector<mp_option_def> option_table(const mp_component_descriptor& d) {
  if (d.options == nullptr || d.n_options == 0) return {};
  return VersionedArray<mp_option_def>(d.options, d.n_options, detail::label_of(d) + " option table").to_vector();
}

class TransportHandle : public detail::Handle<mp_transport_vtable> {
 public:
  TransportHandle() = default;

  static TransportHandle create(const mp_component_descriptor& d, std::shared_ptr<void> library,
                                const mp_host_api* host, const mp_options* options) {
    return TransportHandle(d, std::move(library), [&](void** self, char* err, uint32_t cap) {
      return d.transport->create(host, options, self, err, cap);
    });
  }

  uint32_t open(const std::string& path) {
    o_.require_live("open");
    uint32_t file = 0;
    o_.check(o_.vtable()->open(o_.self(), path.c_str(), &file), "open");
    return file;
  }
  mp_ticket submit(std::span<const mp_read_request> requests) {
    o_.require_live("submit");
    mp_ticket t = 0;
    o_.check(o_.vtable()->submit(o_.self(), requests.data(), static_cast<uint32_t>(requests.size()), &t), "submit");
    return t;
  }
  // Blocks until the ticket completes; throws TicketError if it failed.
  void wait(mp_ticket t) { report(t, false); }
  // True when the ticket has completed; throws TicketError if it completed with an error.
  bool poll(mp_ticket t) { return report(t, true) != MP_PENDING; }
  // True when the transport says which request of a failed ticket failed (ABI 1.4).
  bool reports_failed_requests() const noexcept { return mp::reports_failed_requests(o_.vtable()); }
  mp_transport_stats stats() {
    o_.require_live("stats");
    mp_transport_stats out{};
    out.struct_size = sizeof out;
    o_.check(o_.vtable()->stats(o_.self(), &out), "stats");
    return out;
  }
  // The ticket's completion event, or nullopt when the transport has no ticket_event.
  std::optional<mp_event> ticket_event(mp_ticket t) {
    o_.require_live("ticket_event");
    const mp_transport_vtable* v = o_.vtable();
    if (!MP_HAS_FIELD(v, mp_transport_vtable, ticket_event) || v->ticket_event == nullptr) return std::nullopt;
    mp_event e = nullptr;
    o_.check(v->ticket_event(o_.self(), t, &e), "ticket_event");
    return e;
  }
  mp_transport_ref ref() const noexcept { return mp_transport_ref{sizeof(mp_transport_ref), o_.vtable(), o_.self()}; }

 private:
  template <class Create>
  TransportHandle(const mp_component_descriptor& d, std::shared_ptr<void> library, Create&& create)
      : Handle(d, MP_KIND_TRANSPORT, d.transport, std::move(library), std::forward<Create>(create)) {}

  // wait() or poll(), through wait_result/poll_result when the transport has them.
  mp_status report(mp_ticket t, bool poll) {
    const char* op = poll ? "poll" : "wait";
    o_.require_live(op);
    mp_ticket_result r{};
    const mp_status s = report_ticket(o_.vtable(), o_.self(), t, poll, r);
    if (s != MP_OK && s != MP_PENDING) throw TicketError(s, o_.failure(s, op), r);
    return s;
  }
};

class PagerHandle : public detail::Handle<mp_pager_vtable> {
 public:
  PagerHandle() = default;

  static PagerHandle create(const mp_component_descriptor& d, std::shared_ptr<void> library,
                            const mp_pager_create_args& args) {
    return PagerHandle(d, std::move(library),
                       [&](void** self, char* err, uint32_t cap) { return d.pager->create(&args, self, err, cap); });
  }

  void begin_token(uint64_t token) {
    o_.require_live("begin_token");
    o_.check(o_.vtable()->begin_token(o_.self(), token), "begin_token");
  }
  void acquire(uint32_t layer, std::span<const int32_t> experts, mp_acquire_result* out) {
    o_.require_live("acquire");
    o_.check(o_.vtable()->acquire(o_.self(), layer, experts.data(), static_cast<uint32_t>(experts.size()), out),
             "acquire");
  }
  // The split acquire (ABI 1.5), when the pager offers all three calls (pager.h).
  bool splits_acquire() const noexcept { return mp_pager_splits_acquire(o_.vtable()); }
  void acquire_start(uint32_t layer, std::span<const int32_t> experts, mp_acquire_result* out) {
    o_.require_live("acquire_start");
    o_.check(o_.vtable()->acquire_start(o_.self(), layer, experts.data(), static_cast<uint32_t>(experts.size()), out),
             "acquire_start");
  }
  mp_event acquire_await(uint32_t layer, uint32_t index) {
    o_.require_live("acquire_await");
    mp_event ready = nullptr;
    o_.check(o_.vtable()->acquire_await(o_.self(), layer, index, &ready), "acquire_await");
    return ready;
  }
  void acquire_finish(uint32_t layer) {
    o_.require_live("acquire_finish");
    o_.check(o_.vtable()->acquire_finish(o_.self(), layer), "acquire_finish");
  }
  // Slots that never move (ABI 1.8): fills slots (one per expert of the layer) and returns true;
  // false when the pager does not offer them or answers MP_ERR_UNSUPPORTED.
  bool fixed_slots(uint32_t layer, std::span<void*> slots) {
    o_.require_live("fixed_slots");
    if (!mp_pager_offers_fixed_slots(o_.vtable())) return false;
    const mp_status s = o_.vtable()->fixed_slots(o_.self(), layer, slots.data(), static_cast<uint32_t>(slots.size()));
    if (s == MP_ERR_UNSUPPORTED) return false;
    o_.check(s, "fixed_slots");
    return true;
  }
  // A linear predictor after `layer` (ABI 1.10): fills out and returns true; false when the pager
  // offers none or answers MP_ERR_UNSUPPORTED for that layer.
  bool linear_predictor(uint32_t layer, mp_linear_predictor& out) {
    o_.require_live("linear_predictor");
    if (!mp_pager_offers_linear_predictor(o_.vtable())) return false;
    out = mp_linear_predictor{};
    out.struct_size = sizeof out;
    const mp_status s = o_.vtable()->linear_predictor(o_.self(), layer, &out);
    if (s == MP_ERR_UNSUPPORTED) return false;
    o_.check(s, "linear_predictor");
    return true;
  }
  // The scores of linear_predictor(layer) for this step, in place of observe(layer).
  void observe_scores(uint32_t layer, std::span<const float> scores) {
    o_.require_live("observe_scores");
    if (!mp_pager_offers_linear_predictor(o_.vtable()))
      throw PluginError(MP_ERR_UNSUPPORTED, "observe_scores: the pager offers no linear predictor");
    o_.check(o_.vtable()->observe_scores(o_.self(), layer, scores.data(), static_cast<uint32_t>(scores.size())),
             "observe_scores");
  }
  // Which experts of `layer` are valid in their slots now (ABI 1.11): fills slots (one per expert
  // of the layer, or an empty span for the generation alone) and the generation, and returns true;
  // false when the pager does not offer it or answers MP_ERR_UNSUPPORTED for that layer.
  bool residency(uint32_t layer, std::span<void*> slots, uint64_t& generation) {
    o_.require_live("residency");
    if (!mp_pager_offers_residency(o_.vtable())) return false;
    const mp_status s = o_.vtable()->residency(o_.self(), layer, slots.empty() ? nullptr : slots.data(),
                                               static_cast<uint32_t>(slots.size()), &generation);
    if (s == MP_ERR_UNSUPPORTED) return false;
    o_.check(s, "residency");
    return true;
  }
  // Returns false when the pager does not observe hidden states.
  bool observe(uint32_t layer, const float* hidden, uint32_t d_model, mp_stream stream) {
    o_.require_live("observe");
    const mp_pager_vtable* v = o_.vtable();
    if (!MP_HAS_FIELD(v, mp_pager_vtable, observe) || v->observe == nullptr) return false;
    o_.check(v->observe(o_.self(), layer, hidden, d_model, stream), "observe");
    return true;
  }
  // Returns false when the pager takes no hints.
  bool hint(uint32_t layer, std::span<const int32_t> experts) {
    o_.require_live("hint");
    const mp_pager_vtable* v = o_.vtable();
    if (!MP_HAS_FIELD(v, mp_pager_vtable, hint) || v->hint == nullptr) return false;
    o_.check(v->hint(o_.self(), layer, experts.data(), static_cast<uint32_t>(experts.size())), "hint");
    return true;
  }
  mp_pager_stats stats() {
    o_.require_live("stats");
    mp_pager_stats out{};
    out.struct_size = sizeof out;
    o_.check(o_.vtable()->stats(o_.self(), &out), "stats");
    return out;
  }
  mp_pager_layer_stats layer_stats(uint32_t layer) {
    o_.require_live("layer_stats");
    mp_pager_layer_stats out{};
    out.struct_size = sizeof out;
    o_.check(o_.vtable()->layer_stats(o_.self(), layer, &out), "layer_stats");
    return out;
  }
  // Returns false when the pager cannot trace.
  bool set_trace(mp_trace_fn fn, void* ctx) {
    o_.require_live("set_trace");
    const mp_pager_vtable* v = o_.vtable();
    if (!MP_HAS_FIELD(v, mp_pager_vtable, set_trace) || v->set_trace == nullptr) return false;
    o_.check(v->set_trace(o_.self(), fn, ctx), "set_trace");
    return true;
  }
  mp_pager_ref ref() const noexcept { return mp_pager_ref{sizeof(mp_pager_ref), o_.vtable(), o_.self()}; }

 private:
  template <class Create>
  PagerHandle(const mp_component_descriptor& d, std::shared_ptr<void> library, Create&& create)
      : Handle(d, MP_KIND_PAGER, d.pager, std::move(library), std::forward<Create>(create)) {}
};

class ArchHandle : public detail::Handle<mp_arch_vtable> {
 public:
  ArchHandle() = default;

  // 0 when the architecture cannot run the checkpoint (or has no usable probe).
  static int32_t probe(const mp_component_descriptor& d, const mp_host_api* host, const std::string& dir) {
    if (d.kind != MP_KIND_ARCH || d.arch == nullptr || d.arch->probe == nullptr) return 0;
    return d.arch->probe(host, dir.c_str());
  }

  // Writes a synthetic checkpoint; throws when the architecture cannot or fails.
  static void synthesize(const mp_component_descriptor& d, const mp_host_api* host, const mp_synth_request& req) {
    const mp_arch_vtable* v = d.arch;
    if (d.kind != MP_KIND_ARCH || v == nullptr || !MP_HAS_FIELD(v, mp_arch_vtable, synthesize) ||
        v->synthesize == nullptr)
      throw PluginError(MP_ERR_UNSUPPORTED, detail::label_of(d) + " cannot synthesize checkpoints");
    char err[detail::kErrCap] = {};
    const mp_status s = v->synthesize(host, &req, err, sizeof err);
    if (s != MP_OK)
      throw PluginError(s, detail::label_of(d) + ": synthesize failed (" + mp_status_name(s) +
                               "): " + (*err != '\0' ? err : "no message"));
  }

  static ArchHandle create(const mp_component_descriptor& d, std::shared_ptr<void> library,
                           const mp_arch_create_args& args) {
    return ArchHandle(d, std::move(library),
                      [&](void** self, char* err, uint32_t cap) { return d.arch->create(&args, self, err, cap); });
  }

  mp_model_info describe() {
    o_.require_live("describe");
    mp_model_info out{};
    out.struct_size = sizeof out;
    o_.check(o_.vtable()->describe(o_.self(), &out), "describe");
    return out;
  }
  const mp_expert_catalog* expert_catalog() {
    o_.require_live("expert_catalog");
    const mp_expert_catalog* out = nullptr;
    o_.check(o_.vtable()->expert_catalog(o_.self(), &out), "expert_catalog");
    return out;
  }
  void bind_pager(const mp_pager_ref& pager) {
    o_.require_live("bind_pager");
    o_.check(o_.vtable()->bind_pager(o_.self(), &pager), "bind_pager");
  }
  void reset_sequence() {
    o_.require_live("reset");
    o_.check(o_.vtable()->reset(o_.self()), "reset");
  }
  void forward(std::span<const int32_t> tokens, float* logits, uint32_t flags) {
    o_.require_live("forward");
    o_.check(o_.vtable()->forward(o_.self(), tokens.data(), static_cast<uint32_t>(tokens.size()), logits, flags),
             "forward");
  }
  // True when the architecture picks greedy tokens itself (ABI 1.2 forward_greedy).
  bool has_forward_greedy() const {
    const mp_arch_vtable* v = o_.vtable();
    return v != nullptr && MP_HAS_FIELD(v, mp_arch_vtable, forward_greedy) && v->forward_greedy != nullptr;
  }
  // forward() of the tokens, returning the greedy next token instead of logits; only when
  // has_forward_greedy().
  int32_t forward_greedy(std::span<const int32_t> tokens) {
    o_.require_live("forward_greedy");
    if (!has_forward_greedy()) throw PluginError(MP_ERR_UNSUPPORTED, o_.label() + ": forward_greedy is not provided");
    int32_t next = -1;
    o_.check(o_.vtable()->forward_greedy(o_.self(), tokens.data(), static_cast<uint32_t>(tokens.size()), &next),
             "forward_greedy");
    return next;
  }
  // True when the architecture can run as one rank of an expert-parallel group (ABI 1.7 join_ranks).
  bool has_join_ranks() const {
    const mp_arch_vtable* v = o_.vtable();
    return v != nullptr && MP_HAS_FIELD(v, mp_arch_vtable, join_ranks) && v->join_ranks != nullptr;
  }
  void join_ranks(const mp_expert_parallel& group) {
    o_.require_live("join_ranks");
    if (!has_join_ranks())
      throw PluginError(MP_ERR_UNSUPPORTED, o_.label() + ": cannot run as a rank of several (no join_ranks, ABI 1.7)");
    o_.check(o_.vtable()->join_ranks(o_.self(), &group), "join_ranks");
  }
  // nullopt when the architecture gives no summary.
  std::optional<std::string> summary() {
    o_.require_live("summary");
    const mp_arch_vtable* v = o_.vtable();
    if (!MP_HAS_FIELD(v, mp_arch_vtable, summary) || v->summary == nullptr) return std::nullopt;
    std::vector<char> buf(16384, '\0');
    o_.check(v->summary(o_.self(), buf.data(), static_cast<uint32_t>(buf.size())), "summary");
    buf.back() = '\0';
    return std::string(buf.data());
  }
  // nullopt when the architecture keeps no counters (an ABI 1.0 plugin, or no stats()).
  std::optional<mp_arch_stats> stats() {
    o_.require_live("stats");
    const mp_arch_vtable* v = o_.vtable();
    if (!MP_HAS_FIELD(v, mp_arch_vtable, stats) || v->stats == nullptr) return std::nullopt;
    mp_arch_stats out{};
    out.struct_size = sizeof out;
    o_.check(v->stats(o_.self(), &out), "stats");
    return out;
  }
  // The plugin's instance, for calling its vtable directly (tests, conformance).
  void* instance() const noexcept { return o_.self(); }

 private:
  template <class Create>
  ArchHandle(const mp_component_descriptor& d, std::shared_ptr<void> library, Create&& create)
      : Handle(d, MP_KIND_ARCH, d.arch, std::move(library), std::forward<Create>(create)) {}
};

}  // namespace mp
