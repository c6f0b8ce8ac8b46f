// Conformance checks for pager components: a synthetic expert catalog over two generated files
// (the first layer has no experts; experts alternate between the files), read through a real
// transport. Slot contents are compared part by part with the file bytes each segment names.
#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "conform/conformance.hpp"
#include "conform/sample_file.hpp"
#include "moepage/cpp/host_handles.hpp"

namespace moepage::conform {
namespace {

constexpr uint32_t kLayers = 4;
constexpr uint32_t kLayerWithoutExperts = 0;  // like a model whose first layers are dense
constexpr uint32_t kExperts = 16;
constexpr uint32_t kTopK = 4;
constexpr uint64_t kPartBytes[] = {5000, 40, 3001};  // odd sizes: w1, its scale, w2
constexpr uint64_t kSlotAlign = 256;
constexpr uint64_t kFileBytes = 600 * 1024;

uint64_t round_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

// Owns everything an mp_expert_catalog points to.
class SyntheticCatalog {
 public:
  // `truncate_expert`: when >= 0, that expert of layer 1 gets a segment past the end of its file.
  SyntheticCatalog(const SampleFile& a, const SampleFile& b, int32_t truncate_expert = -1) {
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
          if (layer == 1 && static_cast<int32_t>(e) == truncate_expert) s.offset = kFileBytes - bytes / 2;
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
  const mp_expert_catalog* get() const { return &c_; }
  const mp_expert_segment& segment(uint32_t layer, uint32_t expert, uint32_t part) const {
    return segments_[(static_cast<size_t>(layer) * kExperts + expert) * part_bytes_.size() + part];
  }
  const SampleFile& sample(uint32_t file) const { return *samples_[file]; }
  const std::string& file(uint32_t index) const { return files_[index]; }

 private:
  std::vector<std::string> files_;
  std::vector<const SampleFile*> samples_;
  std::vector<const char*> file_ptrs_;
  std::vector<uint64_t> part_offset_, part_bytes_;
  std::vector<std::string> names_;
  std::vector<const char*> name_ptrs_;
  uint64_t expert_bytes_ = 0;
  std::vector<mp_expert_segment> segments_;
  std::vector<uint8_t> has_experts_, hash_routed_;
  mp_expert_catalog c_{};
};

// A transport and a pager over one catalog; the pager is destroyed first (it uses the transport).
struct Stack {
  mp::TransportHandle transport;
  mp::PagerHandle pager;
  ~Stack() { pager.reset(); }
};

std::unique_ptr<Stack> make_stack(const Component& pager, const Component& transport, const mp_host_api* host,
                                  const ConformConfig& config, const SyntheticCatalog& catalog) {
  auto stack = std::make_unique<Stack>();
  {
    profile::ResolvedOptions t_options = resolve_options(*transport.descriptor, ConformConfig{});
    stack->transport = mp::TransportHandle::create(*transport.descriptor, transport.library, host, t_options.c_options());
  }
  profile::ResolvedOptions p_options = resolve_options(*pager.descriptor, config);
  mp_pager_create_args args{};
  args.struct_size = sizeof args;
  args.host = host;
  args.options = p_options.c_options();
  args.catalog = catalog.get();
  args.transport = stack->transport.ref();
  args.dense_bytes = 0;
  stack->pager = mp::PagerHandle::create(*pager.descriptor, pager.library, args);
  return stack;
}

// Acquires `experts` of `layer` as a token of its own (a pager may keep a token's experts pinned
// until the next begin_token), waits for the ready event and checks every part of every slot.
void acquire_and_verify(mp::PagerHandle& p, const mp_host_api* host, const SyntheticCatalog& catalog, uint32_t layer,
                        const std::vector<int32_t>& experts) {
  static uint64_t token = 0;
  p.begin_token(++token);
  std::vector<void*> slots(experts.size(), nullptr);
  mp_acquire_result result{};
  result.struct_size = sizeof result;
  result.slots = slots.data();
  p.acquire(layer, experts, &result);
  const mp_device_service* dev = host->device;
  if (result.ready != nullptr) {
    expect(dev->event_synchronize(dev->ctx, result.ready) == MP_OK, "waiting for the acquire's ready event failed");
  }
  const mp_expert_catalog& c = *catalog.get();
  std::vector<uint8_t> slot(c.expert_bytes);
  for (size_t i = 0; i < experts.size(); ++i) {
    const std::string who = "layer " + std::to_string(layer) + " expert " + std::to_string(experts[i]);
    expect(slots[i] != nullptr, who + ": acquire returned a NULL slot");
    expect(dev->copy_to_host(dev->ctx, slot.data(), slots[i], c.expert_bytes) == MP_OK, who + ": copying the slot back failed");
    for (uint32_t part = 0; part < c.n_parts; ++part) {
      const mp_expert_segment& s = catalog.segment(layer, static_cast<uint32_t>(experts[i]), part);
      const int64_t bad = catalog.sample(s.file).first_mismatch(s.offset, slot.data() + c.part_offset[part], s.length);
      expect(bad < 0, who + " part " + c.part_names[part] + ": differs from " + catalog.file(s.file) + " at offset " +
                          std::to_string(s.offset + static_cast<uint64_t>(bad)));
    }
  }
}

std::vector<int32_t> random_experts(std::mt19937_64& rng, uint32_t n) {
  std::vector<int32_t> all(kExperts);
  std::iota(all.begin(), all.end(), 0);
  std::shuffle(all.begin(), all.end(), rng);
  all.resize(n);
  return all;
}

}  // namespace

void run_pager_checks(const Component& c, const Component& transport, const mp_host_api* host,
                      const ConformConfig& config, Checklist& list) {
  run_option_checks(c, config, list);
  if (!list.run("the vtable has every required function", [&] {
        const mp_pager_vtable* v = c.descriptor->pager;
        expect(v != nullptr, "the descriptor has no pager vtable");
        expect(v->struct_size >= offsetof(mp_pager_vtable, set_trace), "vtable struct_size " +
                                                                          std::to_string(v->struct_size) +
                                                                          " is smaller than ABI v1's");
        expect(v->create && v->destroy && v->last_error && v->begin_token && v->acquire && v->stats && v->layer_stats,
               "a required function is NULL");
      })) {
    return;
  }
  std::unique_ptr<SampleFile> file_a, file_b;
  if (!list.run("two sample files are generated for the synthetic catalog", [&] {
        file_a = std::make_unique<SampleFile>(kFileBytes, config.seed, config.scratch);
        file_b = std::make_unique<SampleFile>(kFileBytes, config.seed + 1, config.scratch);
      })) {
    return;
  }
  const SyntheticCatalog catalog(*file_a, *file_b);
  std::unique_ptr<Stack> stack;
  if (!creation_check(list,
                      "creates an instance over the synthetic catalog with transport '" +
                          std::string(transport.descriptor->name) + "'",
                      [&] { stack = make_stack(c, transport, host, config, catalog); })) {
    return;
  }
  mp::PagerHandle& p = stack->pager;
  std::mt19937_64 rng(config.seed);
  uint64_t requested = 0;

  list.run("acquire returns byte-exact slots for every expert of every layer", [&] {
    for (uint32_t layer = 0; layer < kLayers; ++layer) {
      if (layer == kLayerWithoutExperts) continue;
      std::vector<int32_t> order = random_experts(rng, kExperts);
      for (uint32_t at = 0; at < kExperts; at += kTopK) {
        const std::vector<int32_t> group(order.begin() + at, order.begin() + at + kTopK);
        acquire_and_verify(p, host, catalog, layer, group);
        requested += group.size();
      }
    }
  });

  list.run("acquiring the same experts twice in a row gives the same bytes, the second time as hits", [&] {
    const std::vector<int32_t> experts = random_experts(rng, kTopK);
    acquire_and_verify(p, host, catalog, 1, experts);
    const mp_pager_stats before = p.stats();
    acquire_and_verify(p, host, catalog, 1, experts);
    const mp_pager_stats after = p.stats();
    requested += 2 * experts.size();
    expect(after.hits - before.hits == experts.size(),
           "the second acquire counted " + std::to_string(after.hits - before.hits) + " hits for " +
               std::to_string(experts.size()) + " experts just acquired");
  });

  list.run("acquire of a prefill band (more than top_k experts, up to the slots per layer) is byte-exact", [&] {
    // A band larger than a layer's slots cannot be held at once; pagers may refuse it.
    const uint32_t slots = p.stats().slots_per_layer;
    const uint32_t band = slots > 0 ? std::min(kTopK * 2 + 1, slots) : kTopK * 2 + 1;
    const std::vector<int32_t> experts = random_experts(rng, band);
    acquire_and_verify(p, host, catalog, 3, experts);
    requested += experts.size();
  });

  list.run("stats are consistent: accesses = hits + misses = experts requested; layers sum to the total", [&] {
    const mp_pager_stats s = p.stats();
    expect(s.accesses == s.hits + s.misses, "accesses " + std::to_string(s.accesses) + " != hits " +
                                                std::to_string(s.hits) + " + misses " + std::to_string(s.misses));
    expect(s.accesses == requested, "accesses " + std::to_string(s.accesses) + ", but " + std::to_string(requested) +
                                        " expert uses were requested");
    uint64_t accesses = 0, hits = 0, misses = 0;
    for (uint32_t layer = 0; layer < kLayers; ++layer) {
      const mp_pager_layer_stats l = p.layer_stats(layer);
      accesses += l.accesses;
      hits += l.hits;
      misses += l.misses;
    }
    expect(accesses == s.accesses && hits == s.hits && misses == s.misses,
           "per-layer stats sum to " + std::to_string(accesses) + "/" + std::to_string(hits) + "/" +
               std::to_string(misses) + ", totals are " + std::to_string(s.accesses) + "/" + std::to_string(s.hits) +
               "/" + std::to_string(s.misses));
  });

  list.run("acquiring an expert outside the catalog fails with a message", [&] {
    for (const int32_t bad : {static_cast<int32_t>(kExperts), -1}) {
      const mp::PluginError e = expect_failure([&] { acquire_and_verify(p, host, catalog, 1, {bad}); },
                                               "acquiring expert " + std::to_string(bad));
      expect(std::string(e.what()).find("no message") == std::string::npos, "the failure carries no message");
    }
  });

  list.run("acquiring from a layer outside the catalog fails with a message", [&] {
    const mp::PluginError e = expect_failure([&] { acquire_and_verify(p, host, catalog, kLayers, {0}); },
                                             "acquiring from layer " + std::to_string(kLayers));
    expect(std::string(e.what()).find("no message") == std::string::npos, "the failure carries no message");
  });

  list.run("the pager keeps serving byte-exact experts after refused calls", [&] {
    acquire_and_verify(p, host, catalog, 2, random_experts(rng, kTopK));
  });

  list.run("a trace, when supported, gets one event per expert access", [&] {
    struct Counter {
      uint64_t events = 0, hits = 0;
    } counter;
    const mp_trace_fn fn = [](void* ctx, const mp_trace_event* e) {
      if (MP_HAS_FIELD(e, mp_trace_event, kind) && e->kind != MP_TRACE_ACCESS) return;  // predictions (1.3)
      auto* k = static_cast<Counter*>(ctx);
      ++k->events;
      k->hits += e->hit;
    };
    if (!p.set_trace(fn, &counter)) return;  // optional in the ABI
    const mp_pager_stats before = p.stats();
    acquire_and_verify(p, host, catalog, 1, random_experts(rng, kTopK));
    acquire_and_verify(p, host, catalog, 3, random_experts(rng, kTopK));
    const mp_pager_stats after = p.stats();
    p.set_trace(nullptr, nullptr);
    expect(counter.events == after.accesses - before.accesses,
           std::to_string(counter.events) + " trace events for " + std::to_string(after.accesses - before.accesses) +
               " accesses");
    expect(counter.hits == after.hits - before.hits, "trace hits disagree with stats hits");
  });

  stack.reset();

  list.run("creating and destroying an instance 10 times works every time", [&] {
    for (int i = 0; i < 10; ++i) make_stack(c, transport, host, config, catalog);
  });

  list.run("an expert whose bytes lie past the end of its file fails naming the file, and fails again", [&] {
    const int32_t broken = 5;
    const SyntheticCatalog truncated(*file_a, *file_b, broken);
    const std::string& path = truncated.file(static_cast<uint32_t>(broken) % 2);
    std::unique_ptr<Stack> s;
    try {
      s = make_stack(c, transport, host, config, truncated);
    } catch (const mp::PluginError& e) {
      // A pager that reads every expert at load reports the broken one there.
      expect(std::string(e.what()).find(path) != std::string::npos, "create failed without naming the file: " +
                                                                         std::string(e.what()));
      return;
    }
    for (int attempt = 0; attempt < 2; ++attempt) {
      const mp::PluginError e = expect_failure([&] { acquire_and_verify(s->pager, host, truncated, 1, {broken}); },
                                               "acquiring the truncated expert (attempt " + std::to_string(attempt + 1) + ")");
      expect(std::string(e.what()).find(path) != std::string::npos, "the error does not name the file: " +
                                                                        std::string(e.what()));
    }
    acquire_and_verify(s->pager, host, truncated, 1, {broken + 1});  // its neighbours still work
  });
}

}  // namespace moepage::conform
