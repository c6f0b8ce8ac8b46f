#include "paged_pager.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <utility>

#include "moepage/cpp/host_clock.hpp"
#include "moepage/cpp/slot_order.hpp"
#include "moepage/pager_core/abi_stats.hpp"
#include "moepage/pager_core/budget.hpp"
#include "moepage/pager_core/errors.hpp"
#include "moepage/pager_core/policy.hpp"
#include "moepage/pager_core/split.hpp"
#include "moepage/pager_core/trace.hpp"

namespace moepage::paging {

using moepage::pager::PagerError;
using moepage::pager::Plan;

namespace {

const mp_device_service* device_of(const mp_host_api* host) {
  if (host == nullptr || !MP_HAS_FIELD(host, mp_host_api, device)) return nullptr;
  return host->device;
}

// A read's tag names what it fills: layer (bits 40..63), expert (8..39) and part (0..7), so a
// transport that reports the failed request's tag (ABI 1.4) names the exact part that failed.
constexpr uint32_t kMaxParts = 255;
constexpr uint32_t kMaxLayers = 1u << 24;
uint64_t read_tag(uint32_t layer, uint32_t expert, uint32_t part) {
  return (uint64_t(layer) << 40) | (uint64_t(expert) << 8) | part;
}
struct TagParts {
  uint32_t layer, expert, part;
};
TagParts parse_tag(uint64_t tag) {
  return TagParts{uint32_t(tag >> 40), uint32_t((tag >> 8) & 0xffffffffu), uint32_t(tag & 0xffu)};
}

}  // namespace

CatalogCopy::CatalogCopy(const mp_expert_catalog& c)
    : n_layers(c.n_layers), n_experts(c.n_experts), n_parts(c.n_parts), top_k(c.top_k), expert_bytes(c.expert_bytes) {
  if (c.struct_size >= offsetof(mp_expert_catalog, d_model) + sizeof c.d_model) d_model = c.d_model;
  if (n_parts == 0 || c.part_offset == nullptr || c.part_bytes == nullptr || c.n_files == 0 || c.files == nullptr ||
      c.segments == nullptr || c.has_experts == nullptr)
    throw mp::Error(MP_ERR_INVALID_ARG, "expert catalog: parts, files, segments and has_experts must all be given");
  if (n_parts > kMaxParts || n_layers >= kMaxLayers)
    throw mp::Error(MP_ERR_INVALID_ARG,
                    mp::format("expert catalog: {} layers of {} parts per expert; at most {} and {}", n_layers, n_parts,
                               kMaxLayers - 1, kMaxParts));
  part_offset.assign(c.part_offset, c.part_offset + n_parts);
  part_bytes.assign(c.part_bytes, c.part_bytes + n_parts);
  for (uint32_t p = 0; p < n_parts; ++p) {
    part_names.emplace_back(c.part_names != nullptr && c.part_names[p] != nullptr ? c.part_names[p]
                                                                                  : "part " + std::to_string(p));
    if (part_offset[p] + part_bytes[p] > expert_bytes)
      throw mp::Error(MP_ERR_INVALID_ARG, mp::format("expert catalog: part {} ends at byte {}, past the {}-byte slot",
                                                     part_names[p], part_offset[p] + part_bytes[p], expert_bytes));
  }
  slot_order = mp::parts_in_slot_order(part_offset.data(), n_parts);
  for (uint32_t f = 0; f < c.n_files; ++f) files.emplace_back(c.files[f] != nullptr ? c.files[f] : "");
  has_experts.assign(c.has_experts, c.has_experts + n_layers);
  hash_routed.assign(n_layers, 0);
  if (c.hash_routed != nullptr) hash_routed.assign(c.hash_routed, c.hash_routed + n_layers);
  // With the architecture's stride (host_api.h): a newer catalog's segments may be larger.
  const size_t n_segments = size_t(n_layers) * n_experts * n_parts;
  if (n_segments > UINT32_MAX) throw mp::Error(MP_ERR_INVALID_ARG, "expert catalog: more than 2^32 segments");
  segments =
      mp::VersionedArray<mp_expert_segment>(c.segments, uint32_t(n_segments), "expert catalog segments").to_vector();
  for (uint32_t l = 0; l < n_layers; ++l) {
    if (!has_experts[l]) continue;
    for (uint32_t e = 0; e < n_experts; ++e)
      for (uint32_t p = 0; p < n_parts; ++p) {
        const mp_expert_segment& s = segment(l, e, p);
        if (s.file >= files.size() || s.length != part_bytes[p])
          throw mp::Error(
              MP_ERR_INVALID_ARG,
              mp::format("expert catalog: layer {} expert {} part {}: file {} of {}, length {} (expected {})", l, e,
                         part_names[p], s.file, files.size(), s.length, part_bytes[p]));
      }
  }
}

PagedPager::PagedPager(const mp_pager_create_args& args, const mp::Options& options, std::string component)
    : component_(std::move(component)),
      acquire_label_("pager '" + component_ + "': acquire"),
      host_(args.host),
      log_(args.host, component_),
      cat_(args.catalog != nullptr ? *args.catalog
                                   : throw mp::Error(MP_ERR_INVALID_ARG, "pager create: no expert catalog")),
      transport_(args.transport) {
  if (transport_.vtable == nullptr || transport_.self == nullptr)
    throw mp::Error(MP_ERR_INVALID_ARG, "pager '" + component_ + "': no transport given");
  const mp_device_service* dev = device_of(host_);
  if (dev == nullptr || dev->alloc_device == nullptr || dev->free_device == nullptr)
    throw mp::Error(MP_ERR_UNSUPPORTED, "pager '" + component_ + "': the host offers no device allocation");
  dst_kind_ = dev->kind == MP_DEVICE_CPU ? MP_MEM_HOST : MP_MEM_DEVICE;
  for (const std::string& path : cat_.files) {
    uint32_t handle = 0;
    if (transport_.vtable->open(transport_.self, path.c_str(), &handle) != MP_OK)
      throw mp::Error(MP_ERR_IO, "pager '" + component_ + "': cannot open " + path + ": " + transport_error());
    file_handles_.push_back(handle);
  }
  mp_transport_stats ts{};
  ts.struct_size = sizeof ts;
  if (transport_.vtable->stats(transport_.self, &ts) == MP_OK) copy_ns_at_create_ = ts.copy_ns;
  pools_.assign(cat_.n_layers, nullptr);
  pending_.resize(cat_.n_layers);
  slot_reads_.resize(cat_.n_layers);
  residency_epoch_.assign(cat_.n_layers, 0);
  for (auto& p : pending_) p.reserve(moepage::pager::kMaxPendingPrefetchesPerLayer);
  try {
    decide_and_allocate(args, options);
  } catch (...) {
    for (uint8_t* pool : pools_)
      if (pool != nullptr) dev->free_device(dev->ctx, pool);
    throw;
  }
}

PagedPager::~PagedPager() {
  // A started acquire's reads are dropped (their slots stay empty); they must land before the
  // pools are freed.
  for (StartedAcquire& a : started_) drain_started(a);
  settle_all_prefetches();
  const mp_device_service* dev = device_of(host_);
  for (uint8_t* pool : pools_)
    if (pool != nullptr) dev->free_device(dev->ctx, pool);
}

void PagedPager::decide_and_allocate(const mp_pager_create_args& args, const mp::Options& options) {
  moepage::pager::BudgetInputs in;
  in.is_auto = options.is_auto("budget");
  if (!in.is_auto) in.budget_bytes = options.get_size("budget");
  in.reserve_bytes = options.get_size("reserve");
  const mp_device_service* dev = device_of(host_);
  // The architecture places its dense weights before it creates the pager, so the free memory
  // measured now is already "after the dense weights"; dense_bytes is only reported.
  uint64_t free_bytes = 0, total_bytes = 0;
  if (!MP_HAS_FIELD(dev, mp_device_service, memory_info) || dev->memory_info == nullptr) {
    in.available_error = "the device service has no memory_info";
  } else if (const mp_status s = dev->memory_info(dev->ctx, &free_bytes, &total_bytes); s != MP_OK) {
    in.available_error = std::string("memory_info failed: ") + mp_status_name(s);
  } else {
    in.available_bytes = free_bytes;
  }
  for (uint32_t l = 0; l < cat_.n_layers; ++l) in.paged_layers += cat_.has_experts[l] ? 1 : 0;
  in.n_experts = cat_.n_experts;
  in.top_k = cat_.top_k;
  in.expert_bytes = cat_.expert_bytes;

  const std::string policy_name = options.get_string("policy");
  const auto policy = moepage::pager::policy_from_name(policy_name);
  if (!policy || *policy == moepage::pager::PolicyKind::Belady)
    throw mp::Error(MP_ERR_INVALID_ARG, "pager '" + component_ + "': option policy = " + policy_name +
                                            ": expected lru, lfu, lfru or s3fifo");

  moepage::pager::BudgetDecision d;
  try {
    d = moepage::pager::decide_budget(in);
  } catch (const PagerError& e) {
    throw mp::Error(e.status(), "pager '" + component_ + "': " + e.what());
  }
  // A budget that holds every expert still pages (one slot per expert, each filled on first use,
  // nothing ever evicted): loading every expert up front is the `resident` pager's job.
  log_.info("{} (dense weights placed: {} bytes)", d.message, args.dense_bytes);
  slots_ = d.slots_per_layer;
  layer_slots_.assign(cat_.n_layers, 0);
  for (uint32_t l = 0; l < cat_.n_layers; ++l)
    if (cat_.has_experts[l]) layer_slots_[l] = slots_;
  const std::string split = options.get_string("split"), split_trace = options.get_string("split_trace");
  if (split == "trace") {
    if (d.mode == moepage::pager::BudgetMode::HoldsAll)
      log_.info("split = trace: the budget holds every expert, so every layer keeps all {} slots", slots_);
    else
      split_by_trace(split_trace, *policy,
                     options.get_string("split_objective") == "misses" ? moepage::pager::SplitObjective::Misses
                                                                       : moepage::pager::SplitObjective::Reads,
                     uint64_t(slots_) * in.paged_layers);
  } else if (!split_trace.empty()) {
    log_.warn("split_trace = {} is ignored: split is {}, not trace", split_trace, split);
  }

  for (uint32_t l = 0; l < cat_.n_layers; ++l) {
    if (!cat_.has_experts[l]) continue;
    const uint64_t bytes = uint64_t(layer_slots_[l]) * cat_.expert_bytes;
    void* p = nullptr;
    if (dev->alloc_device(dev->ctx, bytes, &p) != MP_OK || p == nullptr)
      throw mp::Error(MP_ERR_OOM,
                      mp::format("pager '{}': cannot allocate {} bytes of device memory for layer {}'s {} slots",
                                 component_, bytes, l, layer_slots_[l]));
    pools_[l] = static_cast<uint8_t*>(p);
    pool_bytes_ += bytes;
  }
  requests_.resize(size_t(std::max(slots_, cat_.n_experts)) * cat_.n_parts);
  last_request_.resize(cat_.n_layers);
  for (auto& r : last_request_) r.resize(std::max(slots_, cat_.n_experts));
  last_request_n_.assign(cat_.n_layers, 0);
  started_.resize(cat_.n_layers);
  for (uint32_t l = 0; l < cat_.n_layers; ++l) {
    if (!cat_.has_experts[l]) continue;
    StartedAcquire& a = started_[l];
    a.experts.resize(last_request_[l].size());
    a.missed.resize(last_request_[l].size());
    a.tickets.resize(last_request_[l].size());
    a.prefetch.resize(last_request_[l].size());
    a.slots.resize(last_request_[l].size());
    slot_reads_[l].resize(layer_slots_[l]);
  }

  moepage::pager::CoreGeometry geo;
  geo.n_layers = cat_.n_layers;
  geo.n_experts = cat_.n_experts;
  geo.slots_per_layer = slots_;
  if (split == "trace") geo.layer_slots = layer_slots_;
  geo.paged = cat_.has_experts;
  geo.policy.kind = *policy;
  core_ = std::make_unique<moepage::pager::PagerCore>(std::move(geo));
}

void PagedPager::split_by_trace(const std::string& path, moepage::pager::PolicyKind policy,
                                moepage::pager::SplitObjective objective, uint64_t total_slots) {
  if (path.empty())
    throw mp::Error(MP_ERR_INVALID_ARG, "pager '" + component_ +
                                            "': split = trace needs split_trace, the path of a trace recorded on this "
                                            "model (moepage run --trace; plain text or .xz)");
  moepage::pager::Trace trace;
  try {
    trace = moepage::pager::read_trace_file(path);
  } catch (const PagerError& e) {
    throw mp::Error(MP_ERR_INVALID_ARG, "pager '" + component_ + "': split_trace: " + e.what());
  }
  const moepage::pager::TraceMeta& m = trace.meta;
  if (m.layers != cat_.n_layers || m.experts != cat_.n_experts || (m.top_k != 0 && m.top_k != cat_.top_k))
    throw mp::Error(
        MP_ERR_INVALID_ARG,
        mp::format("pager '{}': split_trace {} was recorded on {} layers x {} experts (top-k {}); expected "
                   "a trace of this model: {} layers x {} experts (top-k {})",
                   component_, path, m.layers, m.experts, m.top_k, cat_.n_layers, cat_.n_experts, cat_.top_k));
  for (const moepage::pager::TraceRow& r : trace.rows)
    if (!cat_.has_experts[r.layer])
      throw mp::Error(MP_ERR_INVALID_ARG,
                      mp::format("pager '{}': split_trace {} has accesses of layer {}, which has no routed experts in "
                                 "this model; expected a trace of this model",
                                 component_, path, r.layer));
  moepage::pager::SplitRequest request;
  request.total_slots = total_slots;
  request.min_slots = cat_.top_k;
  request.layers = cat_.has_experts;
  request.policy.kind = policy;
  request.objective = objective;
  moepage::pager::SplitPlan plan;
  try {
    plan = moepage::pager::split_slots_by_reuse(trace, request);
  } catch (const PagerError& e) {
    throw mp::Error(MP_ERR_INVALID_ARG, "pager '" + component_ + "': split_trace " + path + ": " + e.what());
  }
  if (plan.total_slots > total_slots)  // the split never buys more than the budget did
    throw mp::Error(MP_ERR_INTERNAL, mp::format("pager '{}': the split of {} slots handed out {}", component_,
                                                total_slots, plan.total_slots));
  layer_slots_ = plan.slots;
  log_.info("split = trace ({}, fewest {}): {} slots over the paged layers as {} (uniform: {} each)", path,
            objective == moepage::pager::SplitObjective::Reads ? "reads" : "misses", plan.total_slots,
            moepage::pager::format_layer_slots(layer_slots_), slots_);
}

uint64_t PagedPager::add_reads(uint32_t layer, uint32_t expert, uint32_t slot, int32_t priority, uint32_t& count) {
  uint64_t bytes = 0;
  for (uint32_t p : cat_.slot_order) {
    const mp_expert_segment& s = cat_.segment(layer, expert, p);
    mp_read_request& r = requests_[count++];
    r = mp_read_request{sizeof(mp_read_request),   file_handles_[s.file], s.offset,  s.length,
                        slot_base(layer, slot),    cat_.part_offset[p],   dst_kind_, priority,
                        read_tag(layer, expert, p)};
    bytes += s.length;
  }
  return bytes;
}

std::string PagedPager::transport_error() const {
  const char* e = transport_.vtable->last_error != nullptr ? transport_.vtable->last_error(transport_.self) : nullptr;
  return e != nullptr && *e != '\0' ? e : "the transport gave no message";
}

uint64_t PagedPager::now() const { return mp::host_now_ns(host_); }

mp_status PagedPager::begin_token(uint64_t token) {
  if (started_count_ > 0)
    throw mp::Error(MP_ERR_INVALID_ARG,
                    mp::format("pager '{}': begin_token({}) while {} layer(s) have an acquire started and not finished",
                               component_, token, started_count_));
  token_ = token;
  core_->begin_token(token);
  return MP_OK;
}

std::span<const int32_t> PagedPager::last_request(uint32_t layer) const {
  if (layer >= cat_.n_layers) return {};
  return {last_request_[layer].data(), last_request_n_[layer]};
}

const Plan& PagedPager::plan_with_retry(uint32_t layer, std::span<const int32_t> experts) {
  try {
    return core_->plan(layer, experts);
  } catch (const PagerError& e) {
    // Only prefetch fills of this layer can be in flight, and they were committed: anything else
    // is a request the pool cannot serve.
    throw mp::Error(e.status(), "pager '" + component_ + "': " + e.what());
  }
}

void PagedPager::check_request(uint32_t layer, const int32_t* experts, uint32_t n, const mp_acquire_result& out) const {
  if (n > 0 && (experts == nullptr || out.slots == nullptr))
    throw mp::Error(MP_ERR_INVALID_ARG, "pager '" + component_ + "': acquire needs experts and a slots array");
  if (layer >= cat_.n_layers || !cat_.has_experts[layer])
    throw mp::Error(MP_ERR_INVALID_ARG, mp::format("pager '{}': layer {} has no routed experts (model has {} layers)",
                                                   component_, layer, cat_.n_layers));
  if (n > last_request_[layer].size())
    throw mp::Error(MP_ERR_INVALID_ARG, mp::format("pager '{}': layer {}: {} experts requested, at most {} fit",
                                                   component_, layer, n, last_request_[layer].size()));
  if (started_[layer].active)
    throw mp::Error(MP_ERR_INVALID_ARG,
                    mp::format("pager '{}': layer {}: an acquire_start of this layer is not finished yet (call "
                               "acquire_finish first)",
                               component_, layer));
}

void PagedPager::record_request(uint32_t layer, const Plan& plan, std::span<const int32_t> request) {
  if (trace_fn_ != nullptr) {
    mp_trace_event ev{};  // an access; expert, hit and prefetched are set per expert below
    ev.struct_size = sizeof ev;
    ev.token = token_;
    ev.layer = layer;
    ev.kind = MP_TRACE_ACCESS;
    for (uint32_t i = 0; i < plan.size(); ++i) {
      ev.expert = uint32_t(request[i]);
      ev.hit = plan.hit(i) ? 1 : 0;
      ev.prefetched = plan.part(i).prefetched ? 1 : 0;
      trace_fn_(trace_ctx_, &ev);
    }
  }
  std::copy(request.begin(), request.end(), last_request_[layer].begin());
  last_request_n_[layer] = uint32_t(request.size());
}

mp_status PagedPager::acquire(uint32_t layer, const int32_t* experts, uint32_t n, mp_acquire_result* caller) {
  note_layer_call(layer);
  mp_acquire_result result = mp::read_in(caller, acquire_label_);
  mp_acquire_result* out = &result;
  check_request(layer, experts, n, *out);
  const std::span<const int32_t> request(experts, n);
  out->ready = nullptr;

  commit_prefetches(layer);
  reap_prefetches(layer);
  const Plan& plan = plan_with_retry(layer, request);
  uint32_t count = 0;
  uint64_t bytes = 0;
  std::vector<uint8_t>& missed = started_[layer].missed;  // scratch: nothing is started on this layer
  for (uint32_t i = 0; i < plan.size(); ++i) {
    missed[i] = plan.hit(i) ? 0 : 1;
    if (!missed[i]) continue;
    land_slot(layer, plan.part(i).slot);  // a prefetch still writing the evicted slot lands first
    bytes += add_reads(layer, uint32_t(experts[i]), plan.part(i).slot, MP_READ_DEMAND, count);
  }
  const uint64_t t0 = now();
  mp_ticket ticket = 0;
  mp_status s = MP_OK;
  std::string why;
  if (count > 0 && (s = transport_.vtable->submit(transport_.self, requests_.data(), count, &ticket)) != MP_OK)
    why = transport_error();
  // Hits on prefetched experts whose reads may still be landing: each waited for alone (read again
  // if it failed) while the misses are read.
  std::optional<std::pair<uint32_t, ReadFailure>> hit_failed;
  for (uint32_t i = 0; i < plan.size(); ++i) {
    const uint32_t slot = plan.part(i).slot;
    if (missed[i] || slot_reads_[layer][slot].ticket == 0) continue;
    ReadFailure f{MP_OK, {}, mp::no_failed_request()};
    if (!land_slot(layer, slot, &f) && !read_again(layer, uint32_t(experts[i]), slot, f) && !hit_failed)
      hit_failed.emplace(i, std::move(f));
  }
  if (count > 0) {
    const uint64_t t1 = now();
    mp_ticket_result failed = mp::no_failed_request();
    if (s == MP_OK && (s = mp::report_ticket(transport_.vtable, transport_.self, ticket, false, failed)) != MP_OK)
      why = transport_error();
    const uint64_t t2 = now();
    read_ns_ += t2 - t0;
    wait_ns_ += t2 - t1;
    if (s != MP_OK) {
      core_->invalidate_fill(layer, plan.fill);
      fail_read(layer, request, {missed.data(), n}, ReadFailure{s, why, failed});
    }
    core_->commit_fill(layer, plan.fill);
    bytes_read_ += bytes;
  }
  if (hit_failed) {  // its expert was dropped by read_again; name it alone
    std::fill_n(missed.begin(), n, uint8_t{0});
    missed[hit_failed->first] = 1;
    fail_read(layer, request, {missed.data(), n}, hit_failed->second);
  }
  for (uint32_t i = 0; i < plan.size(); ++i) out->slots[i] = slot_base(layer, plan.part(i).slot);
  out->table_changed = plan.table_changed ? 1 : 0;
  record_request(layer, plan, request);
  mp::write_out(caller, result, acquire_label_);
  return MP_OK;
}

// Names the part whose read failed, with the transport's status. A 1.4 transport reports the
// failed request's tag, which says layer, expert and part. An older one only has a message: the
// request whose range holds the offset it names ("... at offset N ...") is the culprit. When
// neither says, every expert the ticket was reading is named.
void PagedPager::fail_read(uint32_t layer, std::span<const int32_t> experts, std::span<const uint8_t> missed,
                           const ReadFailure& f) {
  if (f.result.failed_request != MP_NO_REQUEST) {
    const TagParts t = parse_tag(f.result.failed_tag);
    for (size_t i = 0; i < experts.size(); ++i)
      if (missed[i] && uint32_t(experts[i]) == t.expert && t.layer == layer && t.part < cat_.n_parts)
        fail_part(layer, t.expert, t.part, f);
  } else if (!mp::reports_failed_requests(transport_.vtable)) {
    if (const std::optional<uint64_t> at = offset_in(f.why))
      for (size_t i = 0; i < experts.size(); ++i) {
        if (!missed[i]) continue;
        for (uint32_t p = 0; p < cat_.n_parts; ++p) {
          const mp_expert_segment& s = cat_.segment(layer, uint32_t(experts[i]), p);
          if (*at >= s.offset && *at < s.offset + s.length && f.why.find(cat_.files[s.file]) != std::string::npos)
            fail_part(layer, uint32_t(experts[i]), p, f);
        }
      }
  }
  std::string missing;
  for (size_t i = 0; i < experts.size(); ++i) {
    if (!missed[i]) continue;
    const mp_expert_segment& s0 = cat_.segment(layer, uint32_t(experts[i]), 0);
    missing += mp::format("{}expert {} ({} at offset {})", missing.empty() ? "" : ", ", experts[i], cat_.files[s0.file],
                          s0.offset);
  }
  throw mp::Error(f.status, mp::format("pager '{}': layer {}: reading {} failed (the slots were left empty): {}",
                                       component_, layer, missing, f.why));
}

void PagedPager::fail_part(uint32_t layer, uint32_t expert, uint32_t part, const ReadFailure& f) const {
  const mp_expert_segment& s = cat_.segment(layer, expert, part);
  throw mp::Error(f.status, mp::format("pager '{}': layer {} expert {} ({}): read of {} at offset {} ({} bytes) failed "
                                       "(the slot was left empty): {}",
                                       component_, layer, expert, cat_.part_names[part], cat_.files[s.file], s.offset,
                                       s.length, f.why));
}

// The first "offset N" in a transport's message (1.0-1.3 transports name no request otherwise).
std::optional<uint64_t> PagedPager::offset_in(const std::string& why) {
  const size_t k = why.find("offset ");
  if (k == std::string::npos) return std::nullopt;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(why.c_str() + k + 7, &end, 10);
  if (end == why.c_str() + k + 7) return std::nullopt;
  return v;
}

mp_status PagedPager::stats(mp_pager_stats* out) {
  mp_pager_stats s{};
  moepage::pager::fill_abi_stats(*core_, s);
  s.struct_size = sizeof s;
  s.bytes_read = bytes_read_;
  s.read_ns = read_ns_;
  s.wait_ns = wait_ns_;
  mp_transport_stats ts{};
  ts.struct_size = sizeof ts;
  if (transport_.vtable->stats(transport_.self, &ts) == MP_OK && ts.copy_ns >= copy_ns_at_create_)
    s.copy_ns = ts.copy_ns - copy_ns_at_create_;
  s.resident = 0;  // always paged; the `resident` pager reports 1
  s.pool_bytes = pool_bytes_;
  s.load_bytes_read = 0;  // create() reads no expert bytes: loading them up front is `resident`'s job
  s.predictions = predictions_;
  s.predictions_hit = predictions_hit_;
  mp::write_out(out, s, "pager '" + component_ + "': stats");
  return MP_OK;
}

mp_status PagedPager::layer_stats(uint32_t layer, mp_pager_layer_stats* out) {
  if (layer >= cat_.n_layers)
    throw mp::Error(MP_ERR_INVALID_ARG,
                    mp::format("pager '{}': layer_stats for layer {} of {}", component_, layer, cat_.n_layers));
  mp_pager_layer_stats s{};
  if (core_->is_paged(layer)) moepage::pager::fill_abi_layer_stats(*core_, layer, s);
  s.struct_size = sizeof s;
  mp::write_out(out, s, "pager '" + component_ + "': layer_stats");
  return MP_OK;
}

void PagedPager::trace_predictions(uint32_t layer, const int32_t* experts, uint32_t n) const {
  if (trace_fn_ == nullptr) return;
  mp_trace_event ev{};
  ev.struct_size = sizeof ev;
  ev.token = token_;
  ev.layer = layer;
  ev.kind = MP_TRACE_PREDICTION;
  for (uint32_t i = 0; i < n; ++i) {
    ev.expert = uint32_t(experts[i]);
    ev.rank = i;
    trace_fn_(trace_ctx_, &ev);
  }
}

mp_status PagedPager::set_trace(mp_trace_fn fn, void* ctx) {
  trace_fn_ = fn;
  trace_ctx_ = ctx;
  return MP_OK;
}

}  // namespace moepage::paging
