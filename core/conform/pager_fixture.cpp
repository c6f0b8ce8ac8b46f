#include "conform/pager_fixture.hpp"

#include <algorithm>
#include <numeric>

namespace moepage::conform {
namespace {

uint64_t round_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

}  // namespace

SyntheticCatalog::SyntheticCatalog(const SampleFile& a, const SampleFile& b, int32_t truncate_expert) {
  files_ = {a.path().string(), b.path().string()};
  samples_ = {&a, &b};
  for (const std::string& f : files_) file_ptrs_.push_back(f.c_str());
  uint64_t at = 0;
  for (uint64_t bytes : kPartBytes) {
    part_offset_.push_back(at);
    part_bytes_.push_back(bytes);
    at = round_up(at + bytes, kSlotAlign);
  }
  names_ = {"w1", "w1.scale", "w2"};
  expert_bytes_ = at;
  std::vector<uint64_t> next(2, 17);  // where the next segment goes in each file; a gap keeps offsets unaligned
  for (uint32_t layer = 0; layer < kLayers; ++layer) {
    has_experts_.push_back(layer == kLayerWithoutExperts ? 0 : 1);
    hash_routed_.push_back(0);
    for (uint32_t e = 0; e < kExperts; ++e) {
      for (uint64_t bytes : kPartBytes) {
        const uint32_t file = e % 2;
        mp_expert_segment s{};
        s.struct_size = sizeof s;
        s.file = file;
        if (layer == kLayerWithoutExperts) {
          segments_.push_back(s);
          continue;
        }
        s.offset = next[file];
        s.length = bytes;
        next[file] += bytes + 3;
        if (layer == 1 && static_cast<int32_t>(e) == truncate_expert) s.offset = kPagerFileBytes - bytes / 2;
        segments_.push_back(s);
      }
    }
  }
  c_.struct_size = sizeof c_;
  c_.n_layers = kLayers;
  c_.n_experts = kExperts;
  c_.n_parts = static_cast<uint32_t>(part_bytes_.size());
  c_.top_k = kTopK;
  c_.expert_bytes = expert_bytes_;
  c_.part_offset = part_offset_.data();
  c_.part_bytes = part_bytes_.data();
  for (const std::string& n : names_) name_ptrs_.push_back(n.c_str());
  c_.part_names = name_ptrs_.data();
  c_.n_files = static_cast<uint32_t>(files_.size());
  c_.files = file_ptrs_.data();
  c_.segments = segments_.data();
  c_.has_experts = has_experts_.data();
  c_.hash_routed = hash_routed_.data();
  c_.d_model = 64;
}

std::unique_ptr<Stack> PagerContext::make_stack(const SyntheticCatalog* over, const mp_transport_ref* through) const {
  auto stack = std::make_unique<Stack>();
  {
    profile::ResolvedOptions t_options = resolve_options(*transport.descriptor, ConformConfig{});
    stack->transport =
        mp::TransportHandle::create(*transport.descriptor, transport.library, host, t_options.c_options());
  }
  profile::ResolvedOptions p_options = resolve_options(*pager.descriptor, config);
  mp_pager_create_args args{};
  args.struct_size = sizeof args;
  args.host = host;
  args.options = p_options.c_options();
  args.catalog = (over != nullptr ? over : &catalog)->get();
  args.transport = through != nullptr ? *through : stack->transport.ref();
  args.dense_bytes = 0;
  stack->pager = mp::PagerHandle::create(*pager.descriptor, pager.library, args);
  return stack;
}

void PagerContext::acquire_and_verify(mp::PagerHandle& p, uint32_t layer, const std::vector<int32_t>& experts,
                                      const SyntheticCatalog* over, bool split) {
  p.begin_token(++token);
  std::vector<void*> slots(experts.size(), nullptr);
  if (split) {
    start_and_await(p, layer, experts, slots);
    p.acquire_finish(layer);
  } else {
    mp_acquire_result result{};
    result.struct_size = sizeof result;
    result.slots = slots.data();
    p.acquire(layer, experts, &result);
    const mp_device_service* dev = host->device;
    if (result.ready != nullptr) {
      expect(dev->event_synchronize(dev->ctx, result.ready) == MP_OK, "waiting for the acquire's ready event failed");
    }
  }
  verify_slots(layer, experts, slots, over);
}

void PagerContext::start_and_await(mp::PagerHandle& p, uint32_t layer, const std::vector<int32_t>& experts,
                                   std::vector<void*>& slots) {
  slots.assign(experts.size(), nullptr);
  std::vector<uint8_t> pending(experts.size(), 2);  // 2: never written
  mp_acquire_result result{};
  result.struct_size = sizeof result;
  result.slots = slots.data();
  result.pending = pending.data();
  const mp_device_service* dev = host->device;
  p.acquire_start(layer, experts, &result);
  if (result.ready != nullptr)
    expect(dev->event_synchronize(dev->ctx, result.ready) == MP_OK, "waiting for the acquire's ready event failed");
  for (size_t i = 0; i < experts.size(); ++i) {
    expect(pending[i] <= 1, "acquire_start left pending[" + std::to_string(i) + "] unwritten");
    if (pending[i] == 0) continue;
    const mp_event ready = p.acquire_await(layer, static_cast<uint32_t>(i));
    if (ready != nullptr)
      expect(dev->event_synchronize(dev->ctx, ready) == MP_OK, "waiting for an expert's ready event failed");
  }
}

void PagerContext::verify_slots(uint32_t layer, const std::vector<int32_t>& experts, const std::vector<void*>& slots,
                                const SyntheticCatalog* over) {
  const SyntheticCatalog& cat = over != nullptr ? *over : catalog;
  const mp_device_service* dev = host->device;
  const mp_expert_catalog& c = *cat.get();
  std::vector<uint8_t> slot(c.expert_bytes);
  for (size_t i = 0; i < experts.size(); ++i) {
    const std::string who = "layer " + std::to_string(layer) + " expert " + std::to_string(experts[i]);
    expect(slots[i] != nullptr, who + ": acquire returned a NULL slot");
    expect(dev->copy_to_host(dev->ctx, slot.data(), slots[i], c.expert_bytes) == MP_OK,
           who + ": copying the slot back failed");
    for (uint32_t part = 0; part < c.n_parts; ++part) {
      const mp_expert_segment& s = cat.segment(layer, static_cast<uint32_t>(experts[i]), part);
      const int64_t bad = cat.sample(s.file).first_mismatch(s.offset, slot.data() + c.part_offset[part], s.length);
      expect(bad < 0, who + " part " + c.part_names[part] + ": differs from " + cat.file(s.file) + " at offset " +
                          std::to_string(s.offset + static_cast<uint64_t>(bad)));
    }
  }
}

std::vector<int32_t> PagerContext::random_experts(uint32_t n) {
  std::vector<int32_t> all(kExperts);
  std::iota(all.begin(), all.end(), 0);
  std::shuffle(all.begin(), all.end(), rng);
  all.resize(n);
  return all;
}

}  // namespace moepage::conform
