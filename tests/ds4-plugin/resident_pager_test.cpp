// The resident pager: every expert read at load through the transport, every access a hit,
// slots holding exactly the catalog's bytes, traces and statistics that say so.
#include <doctest/doctest.h>

#include <cstring>
#include <fstream>

#include "plugin_stack.hpp"
#include "support/temp_dir.hpp"
#include "support/test_paths.hpp"

namespace fs = std::filesystem;

namespace {

std::vector<char> file_bytes(const char* path, uint64_t offset, uint64_t length) {
  std::ifstream f(path, std::ios::binary);
  f.seekg(std::streamoff(offset));
  std::vector<char> out(length);
  f.read(out.data(), std::streamsize(length));
  return out;
}

}  // namespace

TEST_CASE("the resident pager reads every expert at load and its slots hold the catalog's bytes") {
  moepage::test::PluginStack stack(moepage::test::fixture_path("released-fp8-fp4"));
  const mp_expert_catalog* cat = stack.arch.expert_catalog();
  const mp_pager_stats s = stack.pager.stats();
  CHECK(s.resident == 1);
  CHECK(s.slots_per_layer == cat->n_experts);
  CHECK(s.load_bytes_read == stack.info.expert_bytes);
  uint32_t layers = 0;
  for (uint32_t l = 0; l < cat->n_layers; ++l) layers += cat->has_experts[l];
  CHECK(s.pool_bytes == uint64_t(layers) * cat->n_experts * cat->expert_bytes);

  // The last expert of the last layer, every part, byte for byte against the file.
  const uint32_t layer = cat->n_layers - 1, expert = cat->n_experts - 1;
  std::vector<void*> slots(1);
  mp_acquire_result r{sizeof(mp_acquire_result), slots.data(), nullptr, 0, nullptr};
  const int32_t id = int32_t(expert);
  stack.pager.acquire(layer, std::span<const int32_t>(&id, 1), &r);
  CHECK(r.ready == nullptr);
  for (uint32_t p = 0; p < cat->n_parts; ++p) {
    const mp_expert_segment& seg = cat->segments[(size_t(layer) * cat->n_experts + expert) * cat->n_parts + p];
    const auto want = file_bytes(cat->files[seg.file], seg.offset, seg.length);
    CHECK(std::memcmp(static_cast<const char*>(slots[0]) + cat->part_offset[p], want.data(), want.size()) == 0);
  }
}

TEST_CASE("with the resident pager every access of a forward is a hit, in the stats and in the trace") {
  moepage::test::PluginStack stack(moepage::test::fixture_path("hc4-mixed"));
  struct Seen {
    uint64_t events = 0, hits = 0;
  } seen;
  mp::PagerHandle& pager = stack.pager;
  const mp_pager_vtable* v = pager.ref().vtable;
  const bool traces = v->set_trace != nullptr;
  REQUIRE(traces);
  v->set_trace(
      pager.ref().self,
      [](void* ctx, const mp_trace_event* e) {
        auto* s = static_cast<Seen*>(ctx);
        ++s->events;
        s->hits += e->hit;
      },
      &seen);
  const std::vector<int32_t> prompt{5, 17, 42, 99, 3, 7};
  std::vector<float> logits(stack.info.vocab_size);
  stack.arch.forward(prompt, logits.data(), MP_FORWARD_LAST_LOGITS);
  const mp_pager_stats s = pager.stats();
  CHECK(s.accesses > 0);
  CHECK(s.hits == s.accesses);
  CHECK(s.misses == 0);
  CHECK(seen.events == s.accesses);
  CHECK(seen.hits == s.accesses);
  uint64_t per_layer = 0;
  for (uint32_t l = 0; l < stack.info.n_layers; ++l) {
    mp_pager_layer_stats ls{};
    ls.struct_size = sizeof ls;
    REQUIRE(v->layer_stats(pager.ref().self, l, &ls) == MP_OK);
    CHECK(ls.hits == ls.accesses);
    per_layer += ls.accesses;
  }
  CHECK(per_layer == s.accesses);
}

TEST_CASE("acquiring an expert outside the layer's range names the layer and the expert") {
  moepage::test::PluginStack stack(moepage::test::fixture_path("hc2-sigmoid"));
  std::vector<void*> slots(1);
  mp_acquire_result r{sizeof(mp_acquire_result), slots.data(), nullptr, 0, nullptr};
  const int32_t id = int32_t(stack.info.n_experts);
  const std::string want = "layer 0 expert " + std::to_string(id);
  CHECK_THROWS_WITH_AS(stack.pager.acquire(0, std::span<const int32_t>(&id, 1), &r), doctest::Contains(want.c_str()),
                       mp::PluginError);
}

TEST_CASE("the resident pager reports its slots fixed (ABI 1.8): acquire's slots, no access counted") {
  moepage::test::PluginStack stack(moepage::test::fixture_path("hc4-mixed"));
  const mp_expert_catalog* cat = stack.arch.expert_catalog();
  uint32_t layer = cat->n_layers - 1;
  while (layer > 0 && !cat->has_experts[layer]) --layer;
  REQUIRE(cat->has_experts[layer]);
  std::vector<void*> fixed(cat->n_experts, nullptr);
  const uint64_t before = stack.pager.stats().accesses;
  REQUIRE(stack.pager.fixed_slots(layer, fixed));
  CHECK(stack.pager.stats().accesses == before);
  std::vector<int32_t> all(cat->n_experts);
  for (uint32_t e = 0; e < cat->n_experts; ++e) all[e] = int32_t(e);
  std::vector<void*> slots(cat->n_experts, nullptr);
  mp_acquire_result r{sizeof(mp_acquire_result), slots.data(), nullptr, 0, nullptr};
  stack.pager.acquire(layer, all, &r);
  CHECK(slots == fixed);
  CHECK(stack.pager.stats().accesses == before + cat->n_experts);

  // Asked for another count than the layer's experts, or a layer out of range: refused, naming it.
  std::vector<void*> short_array(cat->n_experts - 1);
  const std::string want = "has " + std::to_string(cat->n_experts) + " experts";
  CHECK_THROWS_WITH(stack.pager.fixed_slots(layer, short_array), doctest::Contains(want.c_str()));
  CHECK_THROWS_WITH(stack.pager.fixed_slots(cat->n_layers, fixed), doctest::Contains("out of range"));
}

TEST_CASE("a read past the end of an expert file fails the resident load naming layer, expert, file and offset") {
  // A hand-made catalog: one layer of two single-part experts in a 64-byte file; expert 1's
  // segment lies past the end, so pread comes back short.
  const moepage::test::TempFile file("resident-short");
  moepage::test::write_file(file.path(), std::string(64, 'x'));
  const std::string path = file.path().string();
  const char* files[] = {path.c_str()};
  const uint64_t part_offset[] = {0}, part_bytes[] = {32};
  const char* part_names[] = {"w1"};
  const mp_expert_segment segments[] = {{sizeof(mp_expert_segment), 0, 0, 32},
                                        {sizeof(mp_expert_segment), 0, 4096, 32}};
  const uint8_t has_experts[] = {1}, hash_routed[] = {0};
  const mp_expert_catalog cat{sizeof(mp_expert_catalog),
                              1,
                              2,
                              1,
                              1,
                              64,
                              part_offset,
                              part_bytes,
                              part_names,
                              1,
                              files,
                              segments,
                              has_experts,
                              hash_routed,
                              8};

  moepage::host::HostApi host;
  moepage::host::Registry registry(host.get());
  registry.scan({moepage::test::plugin_dir()});
  const auto& t = registry.find(MP_KIND_TRANSPORT, "pread");
  const auto& p = registry.find(MP_KIND_PAGER, "resident");
  moepage::test::OptionValues topts(*t.descriptor, {}), popts(*p.descriptor, {});
  mp::TransportHandle transport = mp::TransportHandle::create(*t.descriptor, t.library, host.get(), &topts.options);
  mp_pager_create_args args{sizeof(mp_pager_create_args), host.get(), &popts.options, &cat, transport.ref(), 0};
  try {
    mp::PagerHandle::create(*p.descriptor, p.library, args);
    FAIL("the resident pager loaded an expert that lies past the end of its file");
  } catch (const mp::PluginError& e) {
    const std::string msg = e.what();
    INFO(msg);
    CHECK(msg.find("layer 0 expert 1") != std::string::npos);
    CHECK(msg.find("offset 4096") != std::string::npos);
    CHECK(msg.find(path) != std::string::npos);
  }
}
