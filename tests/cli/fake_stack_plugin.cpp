// A tiny but working arch + pager pair for driving `moepage run` end to end before the real
// ones exist. The arch "counting" predicts last token + 1 (mod vocab) and, for every token, asks
// its pager for expert (token % 2) of its single layer and checks the expert's bytes; the pager
// "passthrough" reads each requested expert through the transport it was given. So a run proves
// arch -> pager -> transport -> file and the CLI's decode loop together.
#include <cstring>
#include <string>
#include <vector>

#include "moepage/cpp/plugin_adapter.hpp"

namespace {

constexpr uint32_t kVocab = 16;
constexpr uint32_t kExperts = 2;
constexpr uint64_t kExpertBytes = 64;
constexpr int32_t kEos = 15;

// Byte i of experts.bin, which the test writes.
uint8_t expert_byte(uint64_t i) { return static_cast<uint8_t>(i * 7 + 3); }

class CountingArch {
 public:
  CountingArch(const mp_arch_create_args& args, const mp::Options&)
      : file_(std::string(args.checkpoint_dir) + "/experts.bin") {
    files_[0] = file_.c_str();
    for (uint32_t e = 0; e < kExperts; ++e) {
      segments_[e] = mp_expert_segment{sizeof(mp_expert_segment), 0, e * kExpertBytes, kExpertBytes};
    }
    catalog_.struct_size = sizeof catalog_;
    catalog_.n_layers = 1;
    catalog_.n_experts = kExperts;
    catalog_.n_parts = 1;
    catalog_.top_k = 1;
    catalog_.expert_bytes = kExpertBytes;
    catalog_.part_offset = &part_offset_;
    catalog_.part_bytes = &kExpertBytes;
    catalog_.part_names = part_names_;
    catalog_.n_files = 1;
    catalog_.files = files_;
    catalog_.segments = segments_;
    catalog_.has_experts = &yes_;
    catalog_.hash_routed = &no_;
    catalog_.d_model = 4;
  }
  static int32_t probe(const mp_host_api*, const char*) { return 0; }  // chosen by name only

  void describe(mp_model_info* out) {
    *out = mp_model_info{sizeof(mp_model_info), kVocab, 1, 4, kExperts, 1, -1, kEos, 64, 0, kExperts * kExpertBytes};
  }
  void expert_catalog(const mp_expert_catalog** out) { *out = &catalog_; }
  void bind_pager(const mp_pager_ref* pager) { pager_ = *pager; }
  void reset() {}
  void forward(const int32_t* tokens, uint32_t n, float* logits, uint32_t) {
    if (pager_.vtable == nullptr) throw mp::Error(MP_ERR_INVALID_ARG, "counting: forward before bind_pager");
    for (uint32_t t = 0; t < n; ++t) check_expert(tokens[t] % static_cast<int32_t>(kExperts));
    for (uint32_t v = 0; v < kVocab; ++v) logits[v] = 0.0f;
    logits[(static_cast<uint32_t>(tokens[n - 1]) + 1) % kVocab] = 1.0f;
  }

 private:
  void check_expert(int32_t expert) {
    void* slot = nullptr;
    mp_acquire_result result{sizeof(mp_acquire_result), &slot, nullptr, 0, nullptr};
    if (pager_.vtable->acquire(pager_.self, 0, &expert, 1, &result) != MP_OK) {
      throw mp::Error(MP_ERR_IO, std::string("counting: acquire failed: ") + pager_.vtable->last_error(pager_.self));
    }
    const auto* bytes = static_cast<const uint8_t*>(slot);
    for (uint64_t i = 0; i < kExpertBytes; ++i) {
      if (bytes[i] != expert_byte(static_cast<uint64_t>(expert) * kExpertBytes + i)) {
        throw mp::Error(MP_ERR_IO, mp::format("counting: expert {} byte {} differs from experts.bin", expert, i));
      }
    }
  }

  std::string file_;
  const char* files_[1] = {};
  mp_expert_segment segments_[kExperts] = {};
  uint64_t part_offset_ = 0;
  const char* part_names_[1] = {"all"};
  uint8_t yes_ = 1, no_ = 0;
  mp_expert_catalog catalog_{};
  mp_pager_ref pager_{};
};

class PassthroughPager {
 public:
  PassthroughPager(const mp_pager_create_args& args, const mp::Options&)
      : catalog_(*args.catalog), transport_(args.transport), slots_(catalog_.n_experts) {
    if (transport_.vtable->open(transport_.self, catalog_.files[0], &file_) != MP_OK) {
      throw mp::Error(MP_ERR_IO, transport_.vtable->last_error(transport_.self));
    }
    for (auto& slot : slots_) slot.resize(catalog_.expert_bytes);
  }
  void begin_token(uint64_t) {}
  void acquire(uint32_t layer, const int32_t* experts, uint32_t n, mp_acquire_result* out) {
    for (uint32_t i = 0; i < n; ++i) {
      const mp_expert_segment& seg = catalog_.segments[(layer * catalog_.n_experts + experts[i]) * catalog_.n_parts];
      const mp_read_request request{sizeof(mp_read_request),          file_, seg.offset,  seg.length,
                                    slots_[experts[i]].data(),        0,     MP_MEM_HOST, MP_READ_DEMAND,
                                    static_cast<uint64_t>(experts[i])};
      mp_ticket ticket = 0;
      mp_status s = transport_.vtable->submit(transport_.self, &request, 1, &ticket);
      if (s == MP_OK) s = transport_.vtable->wait(transport_.self, ticket);
      if (s != MP_OK) throw mp::Error(s, transport_.vtable->last_error(transport_.self));  // the status travels on
      out->slots[i] = slots_[experts[i]].data();
    }
    out->ready = nullptr;
    out->table_changed = 1;
  }
  void stats(mp_pager_stats*) {}
  void layer_stats(uint32_t, mp_pager_layer_stats*) {}

 private:
  mp_expert_catalog catalog_;
  mp_transport_ref transport_;
  uint32_t file_ = 0;
  std::vector<std::vector<uint8_t>> slots_;
};

}  // namespace

MOEPAGE_PLUGIN("cli-fake-stack", "0.0.1",
               mp::make_arch_descriptor<CountingArch>("counting", "0.0.1", "test arch: predicts token + 1", MP_CAP_CPU),
               mp::make_pager_descriptor<PassthroughPager>("passthrough", "0.0.1",
                                                           "test pager: reads every acquire through the transport",
                                                           MP_CAP_CPU))
