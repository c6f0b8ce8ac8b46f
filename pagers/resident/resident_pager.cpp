// The `resident` pager: every routed expert placed at load, nothing evicted, paging off.
//
// create() allocates one device slot per expert of every layer that has routed experts (one
// allocation per layer, catalog.expert_bytes per slot) and reads every part of every expert into
// its slot through the transport: each catalog file is opened once, the reads go out in batches
// of up to kBatchReads requests (one ticket per batch), and a failed read is an error naming the
// layer, expert, file and offset. acquire() then only looks slots up: every access is a hit.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "moepage/cpp/host_clock.hpp"
#include "moepage/cpp/plugin_adapter.hpp"
#include "moepage/cpp/slot_order.hpp"

namespace {

// Requests per transport ticket: large enough that readers stay busy, small enough that a failed
// batch is cheap to name.
constexpr uint32_t kBatchReads = 4096;

class ResidentPager {
 public:
  ResidentPager(const mp_pager_create_args& args, const mp::Options&) : host_(args.host), log_(args.host, "resident") {
    const mp_expert_catalog* cat = args.catalog;
    if (cat == nullptr || cat->struct_size < sizeof(mp_expert_catalog))
      throw mp::Error(MP_ERR_INVALID_ARG, "pager 'resident': no expert catalog, or one older than this plugin's ABI");
    if (host_ == nullptr || host_->device == nullptr || host_->device->alloc_device == nullptr)
      throw mp::Error(MP_ERR_UNSUPPORTED, "pager 'resident': the host offers no device allocator");
    const mp_transport_ref& tr = args.transport;
    if (tr.vtable == nullptr || tr.self == nullptr)
      throw mp::Error(MP_ERR_INVALID_ARG, "pager 'resident': no transport instance");
    n_layers_ = cat->n_layers;
    n_experts_ = cat->n_experts;
    expert_bytes_ = cat->expert_bytes;
    layer_slots_.assign(n_layers_, nullptr);
    layer_stats_.assign(n_layers_, Counts{});
    started_.assign(n_layers_, 0);
    const uint64_t t0 = now();
    try {
      allocate(*cat);
      load_all(*cat, tr);
    } catch (...) {
      release();
      throw;
    }
    log_.info("{} experts resident in {} layers: {} bytes read in {} ms", uint64_t(layers_with_experts_) * n_experts_,
              layers_with_experts_, load_bytes_read_, (now() - t0) / 1000000);
  }

  ~ResidentPager() { release(); }
  ResidentPager(const ResidentPager&) = delete;
  ResidentPager& operator=(const ResidentPager&) = delete;

  void begin_token(uint64_t token) { token_ = token; }

  void acquire(uint32_t layer, const int32_t* experts, uint32_t n, mp_acquire_result* out) {
    mp_acquire_result result = mp::read_in(out, "pager 'resident': acquire");
    if (n > 0 && (result.slots == nullptr || experts == nullptr))
      throw mp::Error(MP_ERR_INVALID_ARG, "pager 'resident': acquire needs experts, a result and its slots array");
    std::byte* base = layer_base(layer, "pager 'resident': ");
    if (started_[layer] != 0)
      throw mp::Error(MP_ERR_INVALID_ARG, "pager 'resident': layer " + std::to_string(layer) +
                                              ": an acquire_start of this layer is not finished yet");
    for (uint32_t i = 0; i < n; ++i) {
      if (experts[i] < 0 || uint32_t(experts[i]) >= n_experts_)
        throw mp::Error(MP_ERR_INVALID_ARG, "pager 'resident': layer " + std::to_string(layer) + " expert " +
                                                std::to_string(experts[i]) + " is outside 0.." +
                                                std::to_string(n_experts_ - 1));
      result.slots[i] = base + uint64_t(experts[i]) * expert_bytes_;
    }
    result.ready = nullptr;  // everything was read at load
    result.table_changed = 0;
    mp::write_out(out, result, "pager 'resident': acquire");
    totals_.accesses += n;
    layer_stats_[layer].accesses += n;
    if (trace_fn_ != nullptr) {
      for (uint32_t i = 0; i < n; ++i) {
        mp_trace_event ev{};
        ev.struct_size = sizeof ev;
        ev.token = token_;
        ev.layer = layer;
        ev.expert = uint32_t(experts[i]);
        ev.hit = 1;  // every expert is resident
        ev.kind = MP_TRACE_ACCESS;
        trace_fn_(trace_ctx_, &ev);
      }
    }
  }

  // The split acquire (ABI 1.5): every slot is valid from load, so nothing is ever pending and
  // finish only closes what start opened (the caller's code path is the paged one's).
  void acquire_start(uint32_t layer, const int32_t* experts, uint32_t n, mp_acquire_result* out) {
    const mp_acquire_result in = mp::read_in(out, "pager 'resident': acquire_start");
    if (n > 0 && in.pending == nullptr)
      throw mp::Error(MP_ERR_INVALID_ARG,
                      "pager 'resident': acquire_start needs the result's pending array (ABI 1.5: inside struct_size "
                      "and not NULL)");
    acquire(layer, experts, n, out);  // refuses a started layer
    std::fill_n(in.pending, n, uint8_t{0});
    started_[layer] = n + 1;
  }
  void acquire_await(uint32_t layer, uint32_t index, mp_event* ready) {
    if (ready == nullptr) throw mp::Error(MP_ERR_INVALID_ARG, "pager 'resident': acquire_await: ready is NULL");
    *ready = nullptr;
    if (layer >= n_layers_ || !started_[layer])
      throw mp::Error(MP_ERR_INVALID_ARG,
                      "pager 'resident': acquire_await: layer " + std::to_string(layer) + " has no started acquire");
    if (index >= started_[layer] - 1)
      throw mp::Error(MP_ERR_INVALID_ARG, "pager 'resident': acquire_await: layer " + std::to_string(layer) +
                                              ": index " + std::to_string(index) + " of a " +
                                              std::to_string(started_[layer] - 1) + "-expert request");
  }
  void acquire_finish(uint32_t layer) {
    if (layer >= n_layers_ || !started_[layer])
      throw mp::Error(MP_ERR_INVALID_ARG,
                      "pager 'resident': acquire_finish: layer " + std::to_string(layer) + " has no started acquire");
    started_[layer] = 0;
  }

  void stats(mp_pager_stats* out) {
    mp_pager_stats s{};
    s.struct_size = sizeof s;
    s.accesses = totals_.accesses;
    s.hits = totals_.accesses;  // nothing is ever missing
    s.bytes_read = load_bytes_read_;
    s.read_ns = load_read_ns_;
    s.slots_per_layer = n_experts_;
    s.resident = 1;
    s.pool_bytes = uint64_t(layers_with_experts_) * n_experts_ * expert_bytes_;
    s.load_bytes_read = load_bytes_read_;
    mp::write_out(out, s, "pager 'resident': stats");
  }

  void layer_stats(uint32_t layer, mp_pager_layer_stats* out) {
    if (layer >= n_layers_)
      throw mp::Error(MP_ERR_INVALID_ARG, "layer_stats: layer " + std::to_string(layer) + " is out of range");
    mp_pager_layer_stats s{sizeof(mp_pager_layer_stats), layer_stats_[layer].accesses, layer_stats_[layer].accesses, 0};
    mp::write_out(out, s, "pager 'resident': layer_stats");
  }

  // ABI 1.8: every slot is placed at load and never moves, so the architecture may look them up
  // on the device; its accesses still come through acquire, which counts and traces them.
  void fixed_slots(uint32_t layer, void** slots, uint32_t n) {
    if (slots == nullptr) throw mp::Error(MP_ERR_INVALID_ARG, "pager 'resident': fixed_slots: slots is NULL");
    std::byte* base = layer_base(layer, "pager 'resident': fixed_slots: ");
    if (n != n_experts_)
      throw mp::Error(MP_ERR_INVALID_ARG, "pager 'resident': fixed_slots: asked for " + std::to_string(n) +
                                              " slots, the layer has " + std::to_string(n_experts_) + " experts");
    for (uint32_t i = 0; i < n; ++i) slots[i] = base + uint64_t(i) * expert_bytes_;
  }

  void set_trace(mp_trace_fn fn, void* ctx) {
    trace_fn_ = fn;
    trace_ctx_ = fn ? ctx : nullptr;
  }

 private:
  struct Counts {
    uint64_t accesses = 0;
  };

  uint64_t now() const { return mp::host_now_ns(host_); }

  // The first slot of `layer`, which must exist and route experts; errors start with `who`.
  std::byte* layer_base(uint32_t layer, const std::string& who) const {
    if (layer >= n_layers_ || layer_slots_[layer] == nullptr)
      throw mp::Error(MP_ERR_INVALID_ARG, who + "layer " + std::to_string(layer) +
                                              (layer >= n_layers_ ? " is out of range" : " has no routed experts"));
    return static_cast<std::byte*>(layer_slots_[layer]);
  }

  void allocate(const mp_expert_catalog& cat) {
    if (cat.has_experts == nullptr)
      throw mp::Error(MP_ERR_INVALID_ARG, "pager 'resident': the catalog has no has_experts table");
    const mp_device_service* dev = host_->device;
    for (uint32_t l = 0; l < n_layers_; ++l) {
      if (!cat.has_experts[l]) continue;
      const uint64_t bytes = uint64_t(n_experts_) * expert_bytes_;
      void* p = nullptr;
      if (dev->alloc_device(dev->ctx, bytes, &p) != MP_OK || p == nullptr)
        throw mp::Error(MP_ERR_OOM, "pager 'resident': could not allocate " + std::to_string(bytes) +
                                        " bytes of device memory for layer " + std::to_string(l) + "'s " +
                                        std::to_string(n_experts_) + " experts");
      layer_slots_[l] = p;
      ++layers_with_experts_;
    }
  }

  void release() noexcept {
    const mp_device_service* dev = host_ ? host_->device : nullptr;
    for (void*& p : layer_slots_) {
      if (p != nullptr && dev != nullptr && dev->free_device != nullptr) dev->free_device(dev->ctx, p);
      p = nullptr;
    }
  }

  // Where a request came from, to name it when its batch fails.
  struct Origin {
    uint32_t layer, expert, part;
  };

  // "pager 'resident': reading layer L expert E part P (N bytes at offset O of FILE) failed: why"
  std::string read_failure(const mp_expert_catalog& cat, const mp_read_request& r, const Origin& o,
                           const mp_transport_ref& tr) const {
    return "pager 'resident': reading layer " + std::to_string(o.layer) + " expert " + std::to_string(o.expert) +
           " part " + cat.part_names[o.part] + " (" + std::to_string(r.length) + " bytes at offset " +
           std::to_string(r.offset) + " of " + file_names_.at(r.file) + ") failed: " + tr.vtable->last_error(tr.self);
  }

  void load_all(const mp_expert_catalog& cat, const mp_transport_ref& tr) {
    if (cat.n_parts > 0 && (cat.segments == nullptr || cat.part_offset == nullptr))
      throw mp::Error(MP_ERR_INVALID_ARG, "pager 'resident': the catalog has no segments or part offsets");
    const mp::VersionedArray<mp_expert_segment> segments(
        cat.segments, uint32_t(uint64_t(n_layers_) * n_experts_ * cat.n_parts), "pager 'resident': catalog segments");
    std::vector<uint32_t> handles(cat.n_files);
    for (uint32_t f = 0; f < cat.n_files; ++f) {
      if (const mp_status s = tr.vtable->open(tr.self, cat.files[f], &handles[f]); s != MP_OK)
        throw mp::Error(s, std::string("pager 'resident': transport could not open ") + cat.files[f] + ": " +
                               tr.vtable->last_error(tr.self));
      file_names_[handles[f]] = cat.files[f];
    }
    std::vector<mp_read_request> batch;
    std::vector<Origin> origins;
    batch.reserve(kBatchReads);
    origins.reserve(kBatchReads);
    // An expert's parts in slot order, so a transport may move each expert as one read.
    const std::vector<uint32_t> slot_order = mp::parts_in_slot_order(cat.part_offset, cat.n_parts);
    const uint64_t t0 = now();
    for (uint32_t l = 0; l < n_layers_; ++l) {
      if (layer_slots_[l] == nullptr) continue;
      for (uint32_t e = 0; e < n_experts_; ++e)
        for (uint32_t p : slot_order) {
          const mp_expert_segment seg = segments[uint32_t((size_t(l) * n_experts_ + e) * cat.n_parts + p)];
          if (seg.file >= cat.n_files || cat.part_offset[p] + seg.length > expert_bytes_)
            throw mp::Error(MP_ERR_INVALID_ARG, "pager 'resident': catalog segment of layer " + std::to_string(l) +
                                                    " expert " + std::to_string(e) + " part " + std::to_string(p) +
                                                    " does not fit its slot or names no file");
          mp_read_request r{};
          r.struct_size = sizeof r;
          r.file = handles[seg.file];
          r.offset = seg.offset;
          r.length = seg.length;
          r.dst = layer_slots_[l];
          r.dst_offset = uint64_t(e) * expert_bytes_ + cat.part_offset[p];
          r.dst_kind = MP_MEM_DEVICE;
          r.priority = MP_READ_DEMAND;
          r.tag = (uint64_t(l) << 32) | e;
          batch.push_back(r);
          origins.push_back({l, e, p});
          if (batch.size() == kBatchReads) flush(cat, tr, batch, origins);
        }
    }
    flush(cat, tr, batch, origins);
    load_read_ns_ = now() - t0;
  }

  void flush(const mp_expert_catalog& cat, const mp_transport_ref& tr, std::vector<mp_read_request>& batch,
             std::vector<Origin>& origins) {
    if (batch.empty()) return;
    mp_ticket ticket = 0;
    mp_ticket_result result = mp::no_failed_request();
    mp_status s = tr.vtable->submit(tr.self, batch.data(), uint32_t(batch.size()), &ticket);
    if (s == MP_OK) s = mp::report_ticket(tr.vtable, tr.self, ticket, false, result);
    if (s != MP_OK && result.failed_request < batch.size())  // the transport named the read (ABI 1.4)
      throw mp::Error(s, read_failure(cat, batch[result.failed_request], origins[result.failed_request], tr));
    if (s != MP_OK) {
      // An older transport names no request: retry the batch one request at a time (error path
      // only), so the message names its layer, expert, file and offset exactly.
      for (size_t i = 0; i < batch.size(); ++i) {
        mp_ticket one = 0;
        mp_status si = tr.vtable->submit(tr.self, &batch[i], 1, &one);
        if (si == MP_OK) si = tr.vtable->wait(tr.self, one);
        if (si != MP_OK) throw mp::Error(si, read_failure(cat, batch[i], origins[i], tr));
      }
      throw mp::Error(s, "pager 'resident': a batch of " + std::to_string(batch.size()) + " expert reads from layer " +
                             std::to_string(origins.front().layer) + " expert " +
                             std::to_string(origins.front().expert) +
                             " on failed but every read succeeded alone: " + tr.vtable->last_error(tr.self));
    }
    for (const mp_read_request& r : batch) load_bytes_read_ += r.length;
    batch.clear();
    origins.clear();
  }

  const mp_host_api* host_;
  mp::HostLog log_;
  uint32_t n_layers_ = 0, n_experts_ = 0, layers_with_experts_ = 0;
  uint64_t expert_bytes_ = 0;
  std::vector<void*> layer_slots_;  // [n_layers] base of n_experts slots, or null
  std::vector<Counts> layer_stats_;
  std::vector<uint32_t> started_;  // [n_layers] between acquire_start and acquire_finish: n + 1; else 0
  Counts totals_;
  uint64_t token_ = 0;
  uint64_t load_bytes_read_ = 0, load_read_ns_ = 0;
  std::map<uint32_t, std::string> file_names_;  // transport handle -> catalog path, for messages
  mp_trace_fn trace_fn_ = nullptr;
  void* trace_ctx_ = nullptr;
};

}  // namespace

MOEPAGE_PLUGIN("resident", "0.2.0",
               mp::make_pager_descriptor<ResidentPager>("resident", "0.2.0",
                                                        "every expert resident from load; no paging",
                                                        MP_CAP_CPU | MP_CAP_GPU))
