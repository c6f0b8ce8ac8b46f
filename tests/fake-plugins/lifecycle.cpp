// One library providing all three kinds, each logging its destruction, so tests can check the
// shutdown order (arch, pager, transport) and that the library is unloaded only afterwards.
#include "fake_transport.hpp"

namespace {

class LifecyclePager {
 public:
  LifecyclePager(const mp_pager_create_args& args, const mp::Options&) : log_(args.host, "fake-pager") {
    if (args.transport.vtable == nullptr) throw mp::Error(MP_ERR_INVALID_ARG, "pager needs a transport");
  }
  ~LifecyclePager() { log_.info("destroyed pager"); }
  void begin_token(uint64_t token) { token_ = token; }
  void acquire(uint32_t layer, const int32_t*, uint32_t, mp_acquire_result*) {
    throw mp::Error(MP_ERR_UNSUPPORTED, mp::format("acquire(layer {}) is not part of this fake", layer));
  }
  void stats(mp_pager_stats* out) {
    mp_pager_stats s{};
    s.struct_size = sizeof s;
    s.accesses = token_;
    mp::write_out(out, s, "fake-pager: stats");
  }
  void layer_stats(uint32_t, mp_pager_layer_stats* out) {
    mp::write_out(out, mp_pager_layer_stats{sizeof(mp_pager_layer_stats), 0, 0, 0}, "fake-pager: layer_stats");
  }
  // hint is provided, observe and set_trace are not: their vtable slots must be NULL.
  void hint(uint32_t, const int32_t*, uint32_t n) { hints_ += n; }

 private:
  mp::HostLog log_;
  uint64_t token_ = 0;
  uint64_t hints_ = 0;
};

class LifecycleArch {
 public:
  LifecycleArch(const mp_arch_create_args& args, const mp::Options&) : log_(args.host, "fake-arch") {}
  ~LifecycleArch() { log_.info("destroyed arch"); }
  static int32_t probe(const mp_host_api*, const char*) { return 1; }
  void describe(mp_model_info* out) {
    mp_model_info info{};
    info.struct_size = sizeof info;
    info.n_layers = 3;
    mp::write_out(out, info, "fake-arch: describe");
  }
  void expert_catalog(const mp_expert_catalog**) { throw mp::Error(MP_ERR_NOT_AVAILABLE, "no catalog"); }
  void bind_pager(const mp_pager_ref*) {}
  void reset() {}
  void forward(const int32_t*, uint32_t, float*, uint32_t) { throw mp::Error(MP_ERR_NOT_AVAILABLE, "no forward"); }
  void summary(char* buf, uint32_t cap) { std::snprintf(buf, cap, "fake arch, 3 layers"); }

 private:
  mp::HostLog log_;
};

}  // namespace

MOEPAGE_PLUGIN("fake-lifecycle", "1.0.0",
               mp::make_transport_descriptor<fake::PatternTransport>("fake-life", "1.0.0", "pattern reads", MP_CAP_CPU),
               mp::make_pager_descriptor<LifecyclePager>("fake-life", "1.0.0", "logs its destruction", MP_CAP_CPU),
               mp::make_arch_descriptor<LifecycleArch>("fake-life", "1.0.0", "logs its destruction", MP_CAP_CPU))
