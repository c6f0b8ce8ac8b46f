// Freezes the plugin C ABI v1 as the headers in plugins/include/moepage/ define it, on x86-64
// (LP64, System V). Fields may only ever be appended: if one of these assertions fails, the
// change broke every plugin built so far. Add new fields' offsets at the end of their struct's
// block and bump MP_ABI_MINOR; never edit an existing line.
//
// The vtables are pinned through mp::abi's tables (moepage/cpp/abi_tables.hpp), the same rows the
// loader and the conformance suites read: every row is the next pointer slot, the rows cover the
// whole struct, and the vtable's size at each minor is frozen below. A callback appended to a
// header without its row, or a row out of order, fails here.
#include <doctest/doctest.h>

#include <cstddef>
#include <iterator>
#include <span>
#include <string>

#include "moepage/cpp/abi_tables.hpp"
#include "moepage/moepage.h"

#if !defined(__x86_64__)
#error "the pinned layouts below are the x86-64 ones; add this target's table before building here"
#endif

// Compile-time: the layout itself.
namespace {
constexpr bool host_api_pinned() {
  static_assert(sizeof(mp_device_service) == 160);
  static_assert(offsetof(mp_device_service, struct_size) == 0);
  static_assert(offsetof(mp_device_service, kind) == 4);
  static_assert(offsetof(mp_device_service, ctx) == 8);
  static_assert(offsetof(mp_device_service, alloc_device) == 16);
  static_assert(offsetof(mp_device_service, free_device) == 24);
  static_assert(offsetof(mp_device_service, alloc_pinned) == 32);
  static_assert(offsetof(mp_device_service, free_pinned) == 40);
  static_assert(offsetof(mp_device_service, stream_create) == 48);
  static_assert(offsetof(mp_device_service, stream_destroy) == 56);
  static_assert(offsetof(mp_device_service, stream_synchronize) == 64);
  static_assert(offsetof(mp_device_service, event_create) == 72);
  static_assert(offsetof(mp_device_service, event_destroy) == 80);
  static_assert(offsetof(mp_device_service, event_record) == 88);
  static_assert(offsetof(mp_device_service, stream_wait_event) == 96);
  static_assert(offsetof(mp_device_service, event_query) == 104);
  static_assert(offsetof(mp_device_service, event_synchronize) == 112);
  static_assert(offsetof(mp_device_service, copy_to_device_async) == 120);
  static_assert(offsetof(mp_device_service, copy_to_host) == 128);
  static_assert(offsetof(mp_device_service, memory_info) == 136);
  static_assert(offsetof(mp_device_service, register_host) == 144);  // 1.6
  static_assert(offsetof(mp_device_service, unregister_host) == 152);

  static_assert(sizeof(mp_host_api) == 48);
  static_assert(offsetof(mp_host_api, struct_size) == 0);
  static_assert(offsetof(mp_host_api, abi_major) == 4);
  static_assert(offsetof(mp_host_api, abi_minor) == 8);
  static_assert(offsetof(mp_host_api, ctx) == 16);
  static_assert(offsetof(mp_host_api, log) == 24);
  static_assert(offsetof(mp_host_api, now_ns) == 32);
  static_assert(offsetof(mp_host_api, device) == 40);

  static_assert(sizeof(mp_collective) >= 48);  // 1.7
  static_assert(offsetof(mp_collective, struct_size) == 0);
  static_assert(offsetof(mp_collective, rank) == 4);
  static_assert(offsetof(mp_collective, size) == 8);
  static_assert(offsetof(mp_collective, ctx) == 16);
  static_assert(offsetof(mp_collective, all_reduce_sum_f32) == 24);
  static_assert(offsetof(mp_collective, abort) == 32);
  static_assert(offsetof(mp_collective, last_error) == 40);
  static_assert(offsetof(mp_collective, all_reduce_sum_f32_device) == 48);  // 1.9
  static_assert(sizeof(mp_collective) == 56);

  return true;
}

constexpr bool options_pinned() {
  static_assert(sizeof(mp_option_def) == 40);
  static_assert(offsetof(mp_option_def, struct_size) == 0);
  static_assert(offsetof(mp_option_def, type) == 4);
  static_assert(offsetof(mp_option_def, name) == 8);
  static_assert(offsetof(mp_option_def, default_value) == 16);
  static_assert(offsetof(mp_option_def, help) == 24);
  static_assert(offsetof(mp_option_def, choices) == 32);

  static_assert(sizeof(mp_option_value) == 24);
  static_assert(offsetof(mp_option_value, struct_size) == 0);
  static_assert(offsetof(mp_option_value, name) == 8);
  static_assert(offsetof(mp_option_value, value) == 16);

  static_assert(sizeof(mp_options) == 16);
  static_assert(offsetof(mp_options, struct_size) == 0);
  static_assert(offsetof(mp_options, count) == 4);
  static_assert(offsetof(mp_options, values) == 8);

  return true;
}

constexpr bool transport_pinned() {
  static_assert(sizeof(mp_read_request) == 56);
  static_assert(offsetof(mp_read_request, struct_size) == 0);
  static_assert(offsetof(mp_read_request, file) == 4);
  static_assert(offsetof(mp_read_request, offset) == 8);
  static_assert(offsetof(mp_read_request, length) == 16);
  static_assert(offsetof(mp_read_request, dst) == 24);
  static_assert(offsetof(mp_read_request, dst_offset) == 32);
  static_assert(offsetof(mp_read_request, dst_kind) == 40);
  static_assert(offsetof(mp_read_request, priority) == 44);
  static_assert(offsetof(mp_read_request, tag) == 48);

  static_assert(sizeof(mp_transport_stats) == 56);
  static_assert(offsetof(mp_transport_stats, struct_size) == 0);
  static_assert(offsetof(mp_transport_stats, requests) == 8);
  static_assert(offsetof(mp_transport_stats, bytes_read) == 16);
  static_assert(offsetof(mp_transport_stats, read_ns) == 24);
  static_assert(offsetof(mp_transport_stats, copy_ns) == 32);
  static_assert(offsetof(mp_transport_stats, wait_ns) == 40);
  static_assert(offsetof(mp_transport_stats, errors) == 48);

  static_assert(sizeof(mp_ticket_result) == 24);  // 1.4
  static_assert(offsetof(mp_ticket_result, struct_size) == 0);
  static_assert(offsetof(mp_ticket_result, failed_request) == 4);
  static_assert(offsetof(mp_ticket_result, failed_tag) == 8);
  static_assert(offsetof(mp_ticket_result, failed_count) == 16);
  static_assert(offsetof(mp_ticket_result, reserved) == 20);

  static_assert(sizeof(mp_transport_ref) == 24);
  static_assert(offsetof(mp_transport_ref, struct_size) == 0);
  static_assert(offsetof(mp_transport_ref, vtable) == 8);
  static_assert(offsetof(mp_transport_ref, self) == 16);

  return true;
}

constexpr bool pager_pinned() {
  static_assert(sizeof(mp_expert_segment) == 24);
  static_assert(offsetof(mp_expert_segment, struct_size) == 0);
  static_assert(offsetof(mp_expert_segment, file) == 4);
  static_assert(offsetof(mp_expert_segment, offset) == 8);
  static_assert(offsetof(mp_expert_segment, length) == 16);

  static_assert(sizeof(mp_expert_catalog) == 104);
  static_assert(offsetof(mp_expert_catalog, struct_size) == 0);
  static_assert(offsetof(mp_expert_catalog, n_layers) == 4);
  static_assert(offsetof(mp_expert_catalog, n_experts) == 8);
  static_assert(offsetof(mp_expert_catalog, n_parts) == 12);
  static_assert(offsetof(mp_expert_catalog, top_k) == 16);
  static_assert(offsetof(mp_expert_catalog, expert_bytes) == 24);
  static_assert(offsetof(mp_expert_catalog, part_offset) == 32);
  static_assert(offsetof(mp_expert_catalog, part_bytes) == 40);
  static_assert(offsetof(mp_expert_catalog, part_names) == 48);
  static_assert(offsetof(mp_expert_catalog, n_files) == 56);
  static_assert(offsetof(mp_expert_catalog, files) == 64);
  static_assert(offsetof(mp_expert_catalog, segments) == 72);
  static_assert(offsetof(mp_expert_catalog, has_experts) == 80);
  static_assert(offsetof(mp_expert_catalog, hash_routed) == 88);
  static_assert(offsetof(mp_expert_catalog, d_model) == 96);

  static_assert(sizeof(mp_pager_stats) == 136);
  static_assert(offsetof(mp_pager_stats, struct_size) == 0);
  static_assert(offsetof(mp_pager_stats, accesses) == 8);
  static_assert(offsetof(mp_pager_stats, hits) == 16);
  static_assert(offsetof(mp_pager_stats, misses) == 24);
  static_assert(offsetof(mp_pager_stats, bytes_read) == 32);
  static_assert(offsetof(mp_pager_stats, read_ns) == 40);
  static_assert(offsetof(mp_pager_stats, wait_ns) == 48);
  static_assert(offsetof(mp_pager_stats, copy_ns) == 56);
  static_assert(offsetof(mp_pager_stats, prefetch_issued) == 64);
  static_assert(offsetof(mp_pager_stats, prefetch_used) == 72);
  static_assert(offsetof(mp_pager_stats, prefetch_wasted) == 80);
  static_assert(offsetof(mp_pager_stats, table_uploads) == 88);
  static_assert(offsetof(mp_pager_stats, slots_per_layer) == 96);
  static_assert(offsetof(mp_pager_stats, resident) == 100);
  static_assert(offsetof(mp_pager_stats, pool_bytes) == 104);
  static_assert(offsetof(mp_pager_stats, load_bytes_read) == 112);
  static_assert(offsetof(mp_pager_stats, predictions) == 120);
  static_assert(offsetof(mp_pager_stats, predictions_hit) == 128);

  static_assert(sizeof(mp_pager_layer_stats) == 32);
  static_assert(offsetof(mp_pager_layer_stats, struct_size) == 0);
  static_assert(offsetof(mp_pager_layer_stats, accesses) == 8);
  static_assert(offsetof(mp_pager_layer_stats, hits) == 16);
  static_assert(offsetof(mp_pager_layer_stats, misses) == 24);

  static_assert(sizeof(mp_trace_event) == 40);  // 32 in 1.0-1.2; 1.3 appended kind and rank
  static_assert(offsetof(mp_trace_event, struct_size) == 0);
  static_assert(offsetof(mp_trace_event, token) == 8);
  static_assert(offsetof(mp_trace_event, layer) == 16);
  static_assert(offsetof(mp_trace_event, expert) == 20);
  static_assert(offsetof(mp_trace_event, hit) == 24);
  static_assert(offsetof(mp_trace_event, prefetched) == 25);
  static_assert(offsetof(mp_trace_event, kind) == 32);  // 1.3: past the old struct_size of 32
  static_assert(offsetof(mp_trace_event, rank) == 36);  // 1.3

  static_assert(sizeof(mp_acquire_result) == 40);  // 1.5 appended pending (32 bytes before)
  static_assert(offsetof(mp_acquire_result, struct_size) == 0);
  static_assert(offsetof(mp_acquire_result, slots) == 8);
  static_assert(offsetof(mp_acquire_result, ready) == 16);
  static_assert(offsetof(mp_acquire_result, table_changed) == 24);
  static_assert(offsetof(mp_acquire_result, pending) == 32);  // 1.5

  static_assert(sizeof(mp_linear_predictor) == 40);  // 1.10
  static_assert(offsetof(mp_linear_predictor, struct_size) == 0);
  static_assert(offsetof(mp_linear_predictor, rank) == 4);
  static_assert(offsetof(mp_linear_predictor, d_model) == 8);
  static_assert(offsetof(mp_linear_predictor, n_experts) == 12);
  static_assert(offsetof(mp_linear_predictor, a) == 16);
  static_assert(offsetof(mp_linear_predictor, b) == 24);
  static_assert(offsetof(mp_linear_predictor, bias) == 32);

  static_assert(sizeof(mp_pager_create_args) == 64);
  static_assert(offsetof(mp_pager_create_args, struct_size) == 0);
  static_assert(offsetof(mp_pager_create_args, host) == 8);
  static_assert(offsetof(mp_pager_create_args, options) == 16);
  static_assert(offsetof(mp_pager_create_args, catalog) == 24);
  static_assert(offsetof(mp_pager_create_args, transport) == 32);
  static_assert(offsetof(mp_pager_create_args, dense_bytes) == 56);

  static_assert(sizeof(mp_pager_ref) == 24);
  static_assert(offsetof(mp_pager_ref, struct_size) == 0);
  static_assert(offsetof(mp_pager_ref, vtable) == 8);
  static_assert(offsetof(mp_pager_ref, self) == 16);

  return true;
}

constexpr bool arch_pinned() {
  static_assert(sizeof(mp_model_info) == 56);
  static_assert(offsetof(mp_model_info, struct_size) == 0);
  static_assert(offsetof(mp_model_info, vocab_size) == 4);
  static_assert(offsetof(mp_model_info, n_layers) == 8);
  static_assert(offsetof(mp_model_info, d_model) == 12);
  static_assert(offsetof(mp_model_info, n_experts) == 16);
  static_assert(offsetof(mp_model_info, top_k) == 20);
  static_assert(offsetof(mp_model_info, bos_token) == 24);
  static_assert(offsetof(mp_model_info, eos_token) == 28);
  static_assert(offsetof(mp_model_info, max_positions) == 32);
  static_assert(offsetof(mp_model_info, dense_bytes) == 40);
  static_assert(offsetof(mp_model_info, expert_bytes) == 48);

  static_assert(sizeof(mp_arch_create_args) == 32);
  static_assert(offsetof(mp_arch_create_args, struct_size) == 0);
  static_assert(offsetof(mp_arch_create_args, host) == 8);
  static_assert(offsetof(mp_arch_create_args, options) == 16);
  static_assert(offsetof(mp_arch_create_args, checkpoint_dir) == 24);

  static_assert(sizeof(mp_synth_request) == 56);
  static_assert(offsetof(mp_synth_request, struct_size) == 0);
  static_assert(offsetof(mp_synth_request, preset) == 8);
  static_assert(offsetof(mp_synth_request, out_dir) == 16);
  static_assert(offsetof(mp_synth_request, seed) == 24);
  static_assert(offsetof(mp_synth_request, layers) == 32);
  static_assert(offsetof(mp_synth_request, experts) == 36);
  static_assert(offsetof(mp_synth_request, expert_dtype) == 40);
  static_assert(offsetof(mp_synth_request, show_progress) == 48);

  static_assert(sizeof(mp_arch_stats) >= 32);
  static_assert(offsetof(mp_arch_stats, struct_size) == 0);
  static_assert(offsetof(mp_arch_stats, routed_timed) == 4);
  static_assert(offsetof(mp_arch_stats, tokens) == 8);
  static_assert(offsetof(mp_arch_stats, routed_experts) == 16);
  static_assert(offsetof(mp_arch_stats, routed_ns) == 24);
  static_assert(offsetof(mp_arch_stats, collective_calls) == 32);  // 1.9
  static_assert(offsetof(mp_arch_stats, collective_ns) == 40);
  static_assert(offsetof(mp_arch_stats, slot_lookups) == 48);  // 1.11
  static_assert(offsetof(mp_arch_stats, slot_stalls) == 56);
  static_assert(sizeof(mp_arch_stats) == 64);

  static_assert(sizeof(mp_expert_parallel) == 32);  // 1.7
  static_assert(offsetof(mp_expert_parallel, struct_size) == 0);
  static_assert(offsetof(mp_expert_parallel, n_layers) == 4);
  static_assert(offsetof(mp_expert_parallel, n_experts) == 8);
  static_assert(offsetof(mp_expert_parallel, owner) == 16);
  static_assert(offsetof(mp_expert_parallel, collective) == 24);

  return true;
}

constexpr bool plugin_pinned() {
  static_assert(sizeof(mp_component_descriptor) == 88);
  static_assert(offsetof(mp_component_descriptor, struct_size) == 0);
  static_assert(offsetof(mp_component_descriptor, kind) == 4);
  static_assert(offsetof(mp_component_descriptor, name) == 8);
  static_assert(offsetof(mp_component_descriptor, version) == 16);
  static_assert(offsetof(mp_component_descriptor, description) == 24);
  static_assert(offsetof(mp_component_descriptor, capabilities) == 32);
  static_assert(offsetof(mp_component_descriptor, score) == 40);
  static_assert(offsetof(mp_component_descriptor, n_options) == 48);
  static_assert(offsetof(mp_component_descriptor, options) == 56);
  static_assert(offsetof(mp_component_descriptor, arch) == 64);
  static_assert(offsetof(mp_component_descriptor, pager) == 72);
  static_assert(offsetof(mp_component_descriptor, transport) == 80);

  static_assert(sizeof(mp_plugin_manifest) == 48);
  static_assert(offsetof(mp_plugin_manifest, struct_size) == 0);
  static_assert(offsetof(mp_plugin_manifest, abi_major) == 4);
  static_assert(offsetof(mp_plugin_manifest, abi_minor) == 8);
  static_assert(offsetof(mp_plugin_manifest, plugin_name) == 16);
  static_assert(offsetof(mp_plugin_manifest, version) == 24);
  static_assert(offsetof(mp_plugin_manifest, n_components) == 32);
  static_assert(offsetof(mp_plugin_manifest, components) == 40);

  return true;
}
}  // namespace

TEST_CASE("every v1 struct has the layout the ABI froze") {
  CHECK(host_api_pinned());
  CHECK(options_pinned());
  CHECK(transport_pinned());
  CHECK(pager_pinned());
  CHECK(arch_pinned());
  CHECK(plugin_pinned());
}

// Each vtable's rows are its pointer slots in order, after struct_size, covering the struct.
template <class Vtable>
constexpr bool rows_are_the_slots(std::span<const mp::abi::Callback> rows) {
  for (size_t i = 0; i < rows.size(); ++i) {
    if (rows[i].offset != sizeof(void*) * (i + 1) || rows[i].end != rows[i].offset + sizeof(void*)) return false;
    if (i > 0 && rows[i].since_minor < rows[i - 1].since_minor) return false;  // appended, never inserted
  }
  return !rows.empty() && rows.back().end == sizeof(Vtable);
}
static_assert(rows_are_the_slots<mp_transport_vtable>(mp::abi::kTransportCallbacks));
static_assert(rows_are_the_slots<mp_pager_vtable>(mp::abi::kPagerCallbacks));
static_assert(rows_are_the_slots<mp_arch_vtable>(mp::abi::kArchCallbacks));

// sizeof each vtable in the headers of 1.0, 1.1, ...: frozen, one column per minor.
constexpr uint32_t kTransportSizes[] = {80, 80, 80, 80, 96, 96,
                                        96, 96, 96, 96, 96, 96};  // 1.4 appended wait_result, poll_result
// 1.5 acquire_start, _await, _finish; 1.8 fixed_slots; 1.10 linear_predictor, observe_scores; 1.11 residency
constexpr uint32_t kPagerSizes[] = {88, 88, 88, 88, 88, 112, 112, 112, 120, 120, 136, 144};
// 1.1 stats, 1.2 forward_greedy, 1.7 join_ranks
constexpr uint32_t kArchSizes[] = {96, 104, 112, 112, 112, 112, 112, 120, 120, 120, 120, 120};
static_assert(std::size(kTransportSizes) == MP_ABI_MINOR + 1, "add this minor's column to every size table");

TEST_CASE("every vtable's size at every minor follows from its table and stays frozen") {
  for (uint32_t minor = 0; minor <= MP_ABI_MINOR; ++minor) {
    INFO("ABI 1." << minor);
    CHECK(mp::abi::size_at_minor(mp::abi::kTransportCallbacks, minor) == kTransportSizes[minor]);
    CHECK(mp::abi::size_at_minor(mp::abi::kPagerCallbacks, minor) == kPagerSizes[minor]);
    CHECK(mp::abi::size_at_minor(mp::abi::kArchCallbacks, minor) == kArchSizes[minor]);
  }
  CHECK(sizeof(mp_transport_vtable) == kTransportSizes[MP_ABI_MINOR]);
  CHECK(sizeof(mp_pager_vtable) == kPagerSizes[MP_ABI_MINOR]);
  CHECK(sizeof(mp_arch_vtable) == kArchSizes[MP_ABI_MINOR]);
}

TEST_CASE(
    "a 1.0 plugin must fill its vtables up to the last 1.0 required callback, a 1.4 transport up to poll_result") {
  CHECK(mp::abi::required_size(mp::abi::kTransportCallbacks, 0) == offsetof(mp_transport_vtable, stats) + 8);
  CHECK(mp::abi::required_size(mp::abi::kTransportCallbacks, 3) == offsetof(mp_transport_vtable, stats) + 8);
  CHECK(mp::abi::required_size(mp::abi::kTransportCallbacks, 4) == sizeof(mp_transport_vtable));
  CHECK(mp::abi::required_size(mp::abi::kPagerCallbacks, 4) == offsetof(mp_pager_vtable, layer_stats) + 8);
  // The split acquire of 1.5 is optional: a 1.5 pager needs no more than a 1.0 one.
  CHECK(mp::abi::required_size(mp::abi::kPagerCallbacks, 5) == offsetof(mp_pager_vtable, layer_stats) + 8);
  CHECK(mp::abi::required_size(mp::abi::kArchCallbacks, 4) == offsetof(mp_arch_vtable, forward) + 8);
  // join_ranks (1.7) is optional: a 1.7 architecture needs no more than a 1.0 one.
  CHECK(mp::abi::required_size(mp::abi::kArchCallbacks, 7) == offsetof(mp_arch_vtable, forward) + 8);
  // fixed_slots (1.8) is optional: a 1.8 pager needs no more than a 1.0 one.
  CHECK(mp::abi::required_size(mp::abi::kPagerCallbacks, 8) == offsetof(mp_pager_vtable, layer_stats) + 8);
  // So are linear_predictor and observe_scores (1.10).
  CHECK(mp::abi::required_size(mp::abi::kPagerCallbacks, 10) == offsetof(mp_pager_vtable, layer_stats) + 8);
  // And residency (1.11).
  CHECK(mp::abi::required_size(mp::abi::kPagerCallbacks, 11) == offsetof(mp_pager_vtable, layer_stats) + 8);
}

TEST_CASE("the ABI version is 1.11 and every struct starts with a 32-bit struct_size") {
  CHECK(MP_ABI_MAJOR == 1);
  CHECK(MP_ABI_MINOR == 11);
  CHECK(MP_PLUGIN_ABI_MINOR == MP_ABI_MINOR);  // nothing defined it here: the headers' own minor
  CHECK(sizeof(mp_host_api{}.struct_size) == 4);
  CHECK(sizeof(mp_component_descriptor{}.struct_size) == 4);
  CHECK(sizeof(mp_plugin_manifest{}.struct_size) == 4);
}

TEST_CASE("status codes and enum values keep their numbers") {
  CHECK(MP_TRACE_ACCESS == 0);
  CHECK(MP_TRACE_PREDICTION == 1);
  CHECK(MP_OK == 0);
  CHECK(MP_ERR_INVALID_ARG == 1);
  CHECK(MP_ERR_UNSUPPORTED == 2);
  CHECK(MP_ERR_IO == 3);
  CHECK(MP_ERR_OOM == 4);
  CHECK(MP_ERR_DEVICE == 5);
  CHECK(MP_ERR_NOT_AVAILABLE == 6);
  CHECK(MP_ERR_INTERNAL == 7);
  CHECK(MP_PENDING == 8);
  CHECK(MP_KIND_ARCH == 0);
  CHECK(MP_KIND_PAGER == 1);
  CHECK(MP_KIND_TRANSPORT == 2);
  CHECK(MP_OPT_BOOL == 0);
  CHECK(MP_OPT_ENUM == 7);
  CHECK(MP_OPT_SIZE_OR_AUTO == 5);
  CHECK(MP_LOG_TRACE == 0);
  CHECK(MP_LOG_ERROR == 4);
  CHECK(MP_DEVICE_CPU == 0);
  CHECK(MP_DEVICE_HIP == 1);
  CHECK(MP_MEM_HOST == 0);
  CHECK(MP_MEM_DEVICE == 1);
  CHECK(MP_READ_DEMAND == 0);
  CHECK(MP_READ_PREFETCH == 1);
  CHECK(MP_FORWARD_LAST_LOGITS == 0);
  CHECK(MP_FORWARD_ALL_LOGITS == 1);
  CHECK(MP_CAP_CPU == 1u);
  CHECK(MP_CAP_GPU == 2u);
  CHECK(MP_CAP_ASYNC == 4u);
  CHECK(MP_CAP_PREFETCH == 8u);
  CHECK(MP_CAP_SYNTHESIZE == 16u);
  CHECK(MP_NO_REQUEST == UINT32_MAX);
  CHECK(std::string(MP_PLUGIN_ENTRY_SYMBOL) == "moepage_plugin_query");
}

TEST_CASE("MP_HAS_FIELD accepts a field inside struct_size and rejects one beyond it") {
  mp_transport_vtable v{};
  v.struct_size = offsetof(mp_transport_vtable, ticket_event);
  CHECK(MP_HAS_FIELD(&v, mp_transport_vtable, stats));
  CHECK_FALSE(MP_HAS_FIELD(&v, mp_transport_vtable, ticket_event));
  v.struct_size = sizeof v;
  CHECK(MP_HAS_FIELD(&v, mp_transport_vtable, ticket_event));
  const mp_transport_vtable* none = nullptr;
  CHECK_FALSE(MP_HAS_FIELD(none, mp_transport_vtable, create));
}
