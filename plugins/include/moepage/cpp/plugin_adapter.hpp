// moepage plugin SDK, plugin side: turns a C++ class into a C ABI v1 component.
//
// Usage (a transport; pagers and architectures follow the same pattern):
//
//   #include "moepage/cpp/plugin_adapter.hpp"
//
//   class PreadTransport {
//    public:
//     PreadTransport(const mp_host_api* host, const mp::Options& options);   // may throw
//     MP_TRANSPORT_MEMBERS(PreadTransport);  // declares the five calls below and no copying
//     // or, written out:
//     mp_status open(const char* path, uint32_t* file);          // the C arguments minus `self`;
//     mp_status submit(const mp_read_request* r, uint32_t n, mp_ticket* t);  // return a status
//     mp_status wait(mp_ticket t, mp_ticket_result* r);            // or void; throw mp::Error to
//     mp_status poll(mp_ticket t, mp_ticket_result* r);            // fail with a message
//     mp_status stats(mp_transport_stats* out);                    // fill with mp::write_out
//     // optional: mp_status ticket_event(mp_ticket, mp_event*);  (absent -> NULL in the vtable)
//   };
//
// wait/poll take an mp_ticket_result* (never NULL here) to say which request failed; the adapter
// builds both the 1.0 wait/poll and the 1.4 wait_result/poll_result from them. A class written
// for 1.3 with wait(mp_ticket) and poll(mp_ticket) still builds: its wait_result reports
// MP_NO_REQUEST.
//
//   static constexpr mp_option_def kOptions[] = {
//       mp::option(MP_OPT_INT, "threads", "4", "reader threads"),
//   };
//   MOEPAGE_PLUGIN("pread", "0.1.0",
//       mp::make_transport_descriptor<PreadTransport>("pread", "0.1.0", "positional reads",
//                                                     MP_CAP_CPU, kOptions));
//
// Constructors: transport T(const mp_host_api*, const mp::Options&);
//               pager     T(const mp_pager_create_args&, const mp::Options&);
//               arch      T(const mp_arch_create_args&, const mp::Options&).
// The mp::Options (and the create args) live only for the constructor call: copy what you keep.
// Member functions take the C vtable's arguments without `self` and return mp_status or void.
// Static members: optional `static int32_t score(const mp_host_api*)` (any kind), arch
// `static int32_t probe(const mp_host_api*, const char* dir)` (required) and optional
// `static void synthesize(const mp_host_api*, const mp_synth_request*)`.
//
// Errors: every trampoline is noexcept and catches everything. mp::Error{status, message} fails
// with that status; std::bad_alloc with MP_ERR_OOM; anything else with MP_ERR_INTERNAL. The
// message is what last_error() returns to the thread whose call failed (or, for
// create/synthesize, what lands in err): concurrent failures on other threads never touch it. A
// method that returns a failing status without throwing gets a generic message naming the call.
// Output structs (stats, describe, ...) are written with mp::write_out, which keeps to the
// caller's struct_size; arrays from the other side are read with mp::VersionedArray.
// The manifest declares MP_PLUGIN_ABI_MINOR (host_api.h): define it before the first include to
// run on hosts older than these headers.
// Plugins must not link spdlog/fmt: log through mp::HostLog (moepage/cpp/error.hpp).
#pragma once

#include <cerrno>
#include <concepts>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>  // not used here; kept because plugins written against 1.3 relied on it
#include <new>
#include <span>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "moepage/cpp/error.hpp"
#include "moepage/cpp/error_slots.hpp"
#include "moepage/cpp/options.hpp"
#include "moepage/cpp/structs.hpp"
#include "moepage/cpp/ticket.hpp"
#include "moepage/moepage.h"

namespace mp {

// ---- trampolines ------------------------------------------------------------------------------

namespace detail {

// Copies msg into a caller buffer of `cap` bytes, always NUL-terminated when cap > 0.
inline void write_error(char* err, uint32_t cap, const char* msg) noexcept {
  if (err == nullptr || cap == 0) return;
  std::snprintf(err, cap, "%s", msg == nullptr ? "" : msg);
}

// Runs f and turns every outcome into a status; on failure calls record(message).
template <class F, class Record>
mp_status guarded(const char* op, F&& f, Record&& record) noexcept {
  try {
    if constexpr (std::is_void_v<decltype(f())>) {
      f();
      return MP_OK;
    } else {
      const mp_status s = static_cast<mp_status>(f());
      if (s != MP_OK && s != MP_PENDING) {
        std::string m = std::string(op) + " failed: ";
        m += mp_status_name(s);
        record(m.c_str());
      }
      return s;
    }
  } catch (const Error& e) {
    record(e.what());
    return e.status() == MP_OK || e.status() == MP_PENDING ? MP_ERR_INTERNAL : e.status();
  } catch (const std::bad_alloc&) {
    record("out of memory");
    return MP_ERR_OOM;
  } catch (const std::exception& e) {
    record(e.what());
    return MP_ERR_INTERNAL;
  } catch (...) {
    record("unknown exception");
    return MP_ERR_INTERNAL;
  }
}

// What `self` points to: the plugin's object and the id its error messages are kept under.
template <class T>
struct Instance {
  template <class... A>
  explicit Instance(A&&... a) : impl(std::forward<A>(a)...) {}
  ~Instance() { forget_error(id); }

  void set_error(const char* msg) noexcept { record_error(id, msg); }
  const char* error() const noexcept { return recorded_error(id); }

  T impl;
  const uint64_t id = new_instance_id();
};

template <class T>
Instance<T>* as(void* self) noexcept {
  return static_cast<Instance<T>*>(self);
}

// Calls a member through the instance, recording failures as its last error.
template <class T, class F>
mp_status call(void* self, const char* op, F&& f) noexcept {
  if (self == nullptr) return MP_ERR_INVALID_ARG;
  Instance<T>* inst = as<T>(self);
  return guarded(
      op, [&]() { return f(inst->impl); }, [inst](const char* m) { inst->set_error(m); });
}

template <class T>
void destroy(void* self) noexcept {
  // A destructor that throws is a plugin bug; never let it cross the boundary.
  try {
    delete as<T>(self);
  } catch (...) {
  }
}

template <class T>
const char* last_error(void* self) noexcept {
  if (self == nullptr) return "no instance";
  return as<T>(self)->error();
}

template <class T, class... A>
mp_status create(const char* kind, void** self, char* err, uint32_t err_cap, A&&... a) noexcept {
  if (self == nullptr) {
    write_error(err, err_cap, "create: self is NULL");
    return MP_ERR_INVALID_ARG;
  }
  *self = nullptr;
  Instance<T>* made = nullptr;
  const mp_status s = guarded(
      kind, [&]() { made = new Instance<T>(std::forward<A>(a)...); },
      [&](const char* m) { write_error(err, err_cap, m); });
  if (s == MP_OK) *self = made;
  return s;
}

template <class T>
concept HasScore = requires(const mp_host_api* h) {
  { T::score(h) } -> std::convertible_to<int32_t>;
};

template <class T>
int32_t score(const mp_host_api* host) noexcept {
  try {
    return static_cast<int32_t>(T::score(host));
  } catch (...) {
    return 0;  // a component that cannot even judge the host is unusable here
  }
}

template <class T>
constexpr auto score_fn() {
  if constexpr (HasScore<T>) return &score<T>;
  else return static_cast<int32_t (*)(const mp_host_api*)>(nullptr);
}

}  // namespace detail

// ---- transport --------------------------------------------------------------------------------

namespace detail {

// A transport class whose wait/poll say which request failed (the 1.4 form).
template <class T>
concept ReportsFailedRequest = requires(T& t, mp_ticket tk, mp_ticket_result* r) {
  t.wait(tk, r);
  t.poll(tk, r);
};
// The 1.0-1.3 form: wait/poll of the ticket alone.
template <class T>
concept WaitsForTickets = requires(T& t, mp_ticket tk) {
  t.wait(tk);
  t.poll(tk);
};

// wait() or poll() of T, then which request failed into `out` (NULL: not wanted), inside its
// struct_size. A class of the 1.3 form names no request.
template <class T>
mp_status wait_or_poll(void* self, bool poll, mp_ticket ticket, mp_ticket_result* out) noexcept {
  if (out != nullptr && out->struct_size < sizeof(uint32_t)) {
    if (self != nullptr) as<T>(self)->set_error("wait_result/poll_result: the result's struct_size is 0");
    return MP_ERR_INVALID_ARG;
  }
  mp_ticket_result r = no_failed_request();
  const mp_status s = call<T>(self, poll ? "poll" : "wait", [&](T& t) {
    if constexpr (ReportsFailedRequest<T>) return poll ? t.poll(ticket, &r) : t.wait(ticket, &r);
    else return poll ? t.poll(ticket) : t.wait(ticket);
  });
  if (out != nullptr) mp_write_struct(out, &r, sizeof r);
  return s;
}

}  // namespace detail

template <class T>
concept TransportClass = requires(T& t, const char* path, uint32_t* file, const mp_read_request* r, uint32_t n,
                                  mp_ticket* tp, mp_transport_stats* st) {
  t.open(path, file);
  t.submit(r, n, tp);
  t.stats(st);
}
&&(detail::ReportsFailedRequest<T> ||
   detail::WaitsForTickets<T>)&&std::is_constructible_v<T, const mp_host_api*, const Options&>;

// Declares inside a transport class the member functions TransportClass requires, in their 1.4
// form (wait/poll say which request failed), and makes the class non-copyable (the adapter owns
// it through `self`). The class defines them in its .cpp; the optional ticket_event is declared
// by the classes that offer it. One list, so a transport's signatures cannot drift from the
// adapter's.
// NOLINTBEGIN(bugprone-macro-parentheses): `Class` names a type, which cannot be parenthesised.
#define MP_TRANSPORT_MEMBERS(Class)                                                 \
  Class(const Class&) = delete;                                                     \
  Class& operator=(const Class&) = delete;                                          \
  mp_status open(const char* path, uint32_t* file);                                 \
  mp_status submit(const mp_read_request* requests, uint32_t n, mp_ticket* ticket); \
  mp_status wait(mp_ticket ticket, mp_ticket_result* result);                       \
  mp_status poll(mp_ticket ticket, mp_ticket_result* result);                       \
  mp_status stats(mp_transport_stats* out)
// NOLINTEND(bugprone-macro-parentheses)

template <TransportClass T>
const mp_transport_vtable* transport_vtable() noexcept {
  using namespace detail;
  static const mp_transport_vtable table = [] {
    mp_transport_vtable v{};
    v.struct_size = sizeof(mp_transport_vtable);
    v.create = [](const mp_host_api* host, const mp_options* options, void** self, char* err, uint32_t cap) noexcept {
      return detail::create<T>("transport create", self, err, cap, host, Options(options));
    };
    v.destroy = &detail::destroy<T>;
    v.last_error = &detail::last_error<T>;
    v.open = [](void* self, const char* path, uint32_t* file) noexcept {
      return call<T>(self, "open", [&](T& t) { return t.open(path, file); });
    };
    v.submit = [](void* self, const mp_read_request* r, uint32_t n, mp_ticket* ticket) noexcept {
      return call<T>(self, "submit", [&](T& t) { return t.submit(r, n, ticket); });
    };
    v.wait = [](void* self, mp_ticket ticket) noexcept { return wait_or_poll<T>(self, false, ticket, nullptr); };
    v.poll = [](void* self, mp_ticket ticket) noexcept { return wait_or_poll<T>(self, true, ticket, nullptr); };
    v.wait_result = [](void* self, mp_ticket ticket, mp_ticket_result* out) noexcept {
      return wait_or_poll<T>(self, false, ticket, out);
    };
    v.poll_result = [](void* self, mp_ticket ticket, mp_ticket_result* out) noexcept {
      return wait_or_poll<T>(self, true, ticket, out);
    };
    v.stats = [](void* self, mp_transport_stats* out) noexcept {
      return call<T>(self, "stats", [&](T& t) { return t.stats(out); });
    };
    if constexpr (requires(T & t, mp_ticket tk, mp_event * e) { t.ticket_event(tk, e); }) {
      v.ticket_event = [](void* self, mp_ticket ticket, mp_event* out) noexcept {
        return call<T>(self, "ticket_event", [&](T& t) { return t.ticket_event(ticket, out); });
      };
    }
    return v;
  }();
  return &table;
}

// ---- pager ------------------------------------------------------------------------------------

template <class T>
concept PagerClass = requires(T& t, uint64_t token, uint32_t layer, const int32_t* experts, uint32_t n,
                              mp_acquire_result* out, mp_pager_stats* st, mp_pager_layer_stats* ls) {
  t.begin_token(token);
  t.acquire(layer, experts, n, out);
  t.stats(st);
  t.layer_stats(layer, ls);
}
&&std::is_constructible_v<T, const mp_pager_create_args&, const Options&>;

template <PagerClass T>
const mp_pager_vtable* pager_vtable() noexcept {
  using namespace detail;
  static const mp_pager_vtable table = [] {
    mp_pager_vtable v{};
    v.struct_size = sizeof(mp_pager_vtable);
    v.create = [](const mp_pager_create_args* args, void** self, char* err, uint32_t cap) noexcept {
      mp_pager_create_args a{};  // the host's args, fields it lacks zero
      if (mp_read_struct(&a, sizeof a, args, v1_size<mp_pager_create_args>()) != MP_OK) {
        write_error(err, cap, "pager create: the create args are NULL or smaller than ABI 1.0's");
        return static_cast<mp_status>(MP_ERR_INVALID_ARG);
      }
      return detail::create<T>("pager create", self, err, cap, a, Options(a.options));
    };
    v.destroy = &detail::destroy<T>;
    v.last_error = &detail::last_error<T>;
    v.begin_token = [](void* self, uint64_t token) noexcept {
      return call<T>(self, "begin_token", [&](T& t) { return t.begin_token(token); });
    };
    v.acquire = [](void* self, uint32_t layer, const int32_t* experts, uint32_t n, mp_acquire_result* out) noexcept {
      return call<T>(self, "acquire", [&](T& t) { return t.acquire(layer, experts, n, out); });
    };
    if constexpr (requires(T & t, uint32_t l, const float* h, mp_stream s) { t.observe(l, h, l, s); }) {
      v.observe = [](void* self, uint32_t layer, const float* hidden, uint32_t d_model, mp_stream stream) noexcept {
        return call<T>(self, "observe", [&](T& t) { return t.observe(layer, hidden, d_model, stream); });
      };
    }
    if constexpr (requires(T & t, uint32_t l, const int32_t* e) { t.hint(l, e, l); }) {
      v.hint = [](void* self, uint32_t layer, const int32_t* experts, uint32_t n) noexcept {
        return call<T>(self, "hint", [&](T& t) { return t.hint(layer, experts, n); });
      };
    }
    v.stats = [](void* self, mp_pager_stats* out) noexcept {
      return call<T>(self, "stats", [&](T& t) { return t.stats(out); });
    };
    v.layer_stats = [](void* self, uint32_t layer, mp_pager_layer_stats* out) noexcept {
      return call<T>(self, "layer_stats", [&](T& t) { return t.layer_stats(layer, out); });
    };
    if constexpr (requires(T & t, mp_trace_fn fn, void* ctx) { t.set_trace(fn, ctx); }) {
      v.set_trace = [](void* self, mp_trace_fn fn, void* ctx) noexcept {
        return call<T>(self, "set_trace", [&](T& t) { return t.set_trace(fn, ctx); });
      };
    }
    // The split acquire (1.5): all three, or none (pager.h).
    if constexpr (requires(T & t, uint32_t l, const int32_t* e, mp_acquire_result* r, mp_event* ev) {
                    t.acquire_start(l, e, l, r);
                    t.acquire_await(l, l, ev);
                    t.acquire_finish(l);
                  }) {
      v.acquire_start = [](void* self, uint32_t layer, const int32_t* experts, uint32_t n,
                           mp_acquire_result* out) noexcept {
        return call<T>(self, "acquire_start", [&](T& t) { return t.acquire_start(layer, experts, n, out); });
      };
      v.acquire_await = [](void* self, uint32_t layer, uint32_t index, mp_event* ready) noexcept {
        return call<T>(self, "acquire_await", [&](T& t) { return t.acquire_await(layer, index, ready); });
      };
      v.acquire_finish = [](void* self, uint32_t layer) noexcept {
        return call<T>(self, "acquire_finish", [&](T& t) { return t.acquire_finish(layer); });
      };
    }
    // Slots that never move (1.8).
    if constexpr (requires(T & t, uint32_t l, void** slots) { t.fixed_slots(l, slots, l); }) {
      v.fixed_slots = [](void* self, uint32_t layer, void** slots, uint32_t n) noexcept {
        return call<T>(self, "fixed_slots", [&](T& t) { return t.fixed_slots(layer, slots, n); });
      };
    }
    // A linear predictor the host evaluates (1.10): both calls or neither.
    if constexpr (requires(T & t, uint32_t l, mp_linear_predictor * p, const float* s) {
                    t.linear_predictor(l, p);
                    t.observe_scores(l, s, l);
                  }) {
      v.linear_predictor = [](void* self, uint32_t layer, mp_linear_predictor* out) noexcept {
        return call<T>(self, "linear_predictor", [&](T& t) { return t.linear_predictor(layer, out); });
      };
      v.observe_scores = [](void* self, uint32_t layer, const float* scores, uint32_t n) noexcept {
        return call<T>(self, "observe_scores", [&](T& t) { return t.observe_scores(layer, scores, n); });
      };
    }
    // Which slots a host may read without acquiring (1.11).
    if constexpr (requires(T & t, uint32_t l, void** slots, uint64_t* g) { t.residency(l, slots, l, g); }) {
      v.residency = [](void* self, uint32_t layer, void** slots, uint32_t n, uint64_t* generation) noexcept {
        return call<T>(self, "residency", [&](T& t) { return t.residency(layer, slots, n, generation); });
      };
    }
    return v;
  }();
  return &table;
}

// ---- arch -------------------------------------------------------------------------------------

template <class T>
concept ArchClass = requires(T& t, const mp_host_api* host, const char* dir, mp_model_info* info,
                             const mp_expert_catalog** cat, const mp_pager_ref* pager, const int32_t* tokens,
                             uint32_t n, float* logits) {
  { T::probe(host, dir) } -> std::convertible_to<int32_t>;
  t.describe(info);
  t.expert_catalog(cat);
  t.bind_pager(pager);
  t.reset();
  t.forward(tokens, n, logits, n);
}
&&std::is_constructible_v<T, const mp_arch_create_args&, const Options&>;

template <ArchClass T>
const mp_arch_vtable* arch_vtable() noexcept {
  using namespace detail;
  static const mp_arch_vtable table = [] {
    mp_arch_vtable v{};
    v.struct_size = sizeof(mp_arch_vtable);
    v.probe = [](const mp_host_api* host, const char* dir) noexcept -> int32_t {
      try {
        const int32_t s = static_cast<int32_t>(T::probe(host, dir));
        return s < 0 ? 0 : s;
      } catch (...) {
        return 0;  // probing must never fail loudly: it only ranks candidates
      }
    };
    v.create = [](const mp_arch_create_args* args, void** self, char* err, uint32_t cap) noexcept {
      mp_arch_create_args a{};  // the host's args, fields it lacks zero
      if (mp_read_struct(&a, sizeof a, args, v1_size<mp_arch_create_args>()) != MP_OK) {
        write_error(err, cap, "arch create: the create args are NULL or smaller than ABI 1.0's");
        return static_cast<mp_status>(MP_ERR_INVALID_ARG);
      }
      return detail::create<T>("arch create", self, err, cap, a, Options(a.options));
    };
    v.destroy = &detail::destroy<T>;
    v.last_error = &detail::last_error<T>;
    v.describe = [](void* self, mp_model_info* out) noexcept {
      return call<T>(self, "describe", [&](T& t) { return t.describe(out); });
    };
    v.expert_catalog = [](void* self, const mp_expert_catalog** out) noexcept {
      return call<T>(self, "expert_catalog", [&](T& t) { return t.expert_catalog(out); });
    };
    v.bind_pager = [](void* self, const mp_pager_ref* pager) noexcept {
      return call<T>(self, "bind_pager", [&](T& t) { return t.bind_pager(pager); });
    };
    v.reset = [](void* self) noexcept { return call<T>(self, "reset", [&](T& t) { return t.reset(); }); };
    v.forward = [](void* self, const int32_t* tokens, uint32_t n, float* logits, uint32_t flags) noexcept {
      return call<T>(self, "forward", [&](T& t) { return t.forward(tokens, n, logits, flags); });
    };
    if constexpr (requires(T & t, char* buf, uint32_t cap) { t.summary(buf, cap); }) {
      v.summary = [](void* self, char* buf, uint32_t cap) noexcept {
        return call<T>(self, "summary", [&](T& t) { return t.summary(buf, cap); });
      };
    }
    if constexpr (requires(T & t, mp_arch_stats * out) { t.stats(out); }) {
      v.stats = [](void* self, mp_arch_stats* out) noexcept {
        return call<T>(self, "stats", [&](T& t) { return t.stats(out); });
      };
    }
    if constexpr (requires(T & t, const int32_t* tokens, uint32_t n, int32_t* next) {
                    t.forward_greedy(tokens, n, next);
                  }) {
      v.forward_greedy = [](void* self, const int32_t* tokens, uint32_t n, int32_t* next) noexcept {
        return call<T>(self, "forward_greedy", [&](T& t) { return t.forward_greedy(tokens, n, next); });
      };
    }
    if constexpr (requires(T & t, const mp_expert_parallel* group) { t.join_ranks(group); }) {
      v.join_ranks = [](void* self, const mp_expert_parallel* group) noexcept {
        return call<T>(self, "join_ranks", [&](T& t) { return t.join_ranks(group); });
      };
    }
    if constexpr (requires(const mp_host_api* h, const mp_synth_request* r) { T::synthesize(h, r); }) {
      v.synthesize = [](const mp_host_api* host, const mp_synth_request* request, char* err, uint32_t cap) noexcept {
        return guarded(
            "synthesize", [&]() { return T::synthesize(host, request); },
            [&](const char* m) { write_error(err, cap, m); });
      };
    }
    return v;
  }();
  return &table;
}

// ---- descriptors and the entry point ---------------------------------------------------------

namespace detail {

// Everything of a descriptor but the kind's vtable, which the make_*_descriptor below add.
template <class T>
mp_component_descriptor descriptor_without_vtable(int32_t kind, const char* name, const char* version,
                                                  const char* description, uint32_t capabilities,
                                                  std::span<const mp_option_def> options) {
  mp_component_descriptor d{};
  d.struct_size = sizeof(mp_component_descriptor);
  d.kind = kind;
  d.name = name;
  d.version = version;
  d.description = description;
  d.capabilities = capabilities;
  d.score = score_fn<T>();
  d.n_options = static_cast<uint32_t>(options.size());
  d.options = options.empty() ? nullptr : options.data();
  return d;
}

}  // namespace detail

template <TransportClass T>
mp_component_descriptor make_transport_descriptor(const char* name, const char* version, const char* description,
                                                  uint32_t capabilities, std::span<const mp_option_def> options = {}) {
  mp_component_descriptor d =
      detail::descriptor_without_vtable<T>(MP_KIND_TRANSPORT, name, version, description, capabilities, options);
  d.transport = transport_vtable<T>();
  return d;
}

template <PagerClass T>
mp_component_descriptor make_pager_descriptor(const char* name, const char* version, const char* description,
                                              uint32_t capabilities, std::span<const mp_option_def> options = {}) {
  mp_component_descriptor d =
      detail::descriptor_without_vtable<T>(MP_KIND_PAGER, name, version, description, capabilities, options);
  d.pager = pager_vtable<T>();
  return d;
}

template <ArchClass T>
mp_component_descriptor make_arch_descriptor(const char* name, const char* version, const char* description,
                                             uint32_t capabilities, std::span<const mp_option_def> options = {}) {
  mp_component_descriptor d =
      detail::descriptor_without_vtable<T>(MP_KIND_ARCH, name, version, description, capabilities, options);
  d.arch = arch_vtable<T>();
  return d;
}

// Fills the host's manifest; the body of moepage_plugin_query. `components` must be static.
// The manifest declares MP_PLUGIN_ABI_MINOR: the oldest host this plugin runs on.
inline mp_status fill_manifest(mp_plugin_manifest* manifest, const char* plugin_name, const char* version,
                               std::span<const mp_component_descriptor> components) noexcept {
  mp_plugin_manifest m{};
  m.struct_size = sizeof m;
  m.abi_major = MP_ABI_MAJOR;
  m.abi_minor = MP_PLUGIN_ABI_MINOR;
  m.plugin_name = plugin_name;
  m.version = version;
  m.n_components = static_cast<uint32_t>(components.size());
  m.components = components.data();
  // Every field of the manifest has been there since 1.0: a host that allocated less is broken.
  if (manifest == nullptr || manifest->struct_size < v1_size<mp_plugin_manifest>()) return MP_ERR_INVALID_ARG;
  return mp_write_struct(manifest, &m, sizeof m);
}

}  // namespace mp

// Defines the library's one exported symbol. The descriptor list is built once, on first query,
// into static storage; an exception while building it becomes MP_ERR_INTERNAL.
#define MOEPAGE_PLUGIN(plugin_name, plugin_version, ...)                                      \
  extern "C" MP_PLUGIN_EXPORT mp_status moepage_plugin_query(const mp_host_api* /*host*/,     \
                                                             mp_plugin_manifest* manifest) {  \
    try {                                                                                     \
      static const mp_component_descriptor moepage_components_[] = {__VA_ARGS__};             \
      return ::mp::fill_manifest(manifest, plugin_name, plugin_version, moepage_components_); \
    } catch (...) {                                                                           \
      return MP_ERR_INTERNAL;                                                                 \
    }                                                                                         \
  }
