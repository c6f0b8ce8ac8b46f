// The deepseek4 arch's side of the ABI contract: what describe() and summary() report, that
// create() stays cheap and names what is wrong, and that misuse is a clear error, not a crash.
#include <doctest/doctest.h>

#include <cstddef>
#include <cstring>

#include "plugin_stack.hpp"
#include "support/output_struct.hpp"
#include "support/temp_dir.hpp"
#include "support/test_paths.hpp"

namespace fs = std::filesystem;
using moepage::test::OptionValues;

namespace {

struct ArchOnly {
  moepage::host::HostApi host;
  moepage::host::Registry registry{host.get()};
  const moepage::host::LoadedComponent* component = nullptr;
  std::unique_ptr<OptionValues> values;
  ArchOnly() {
    registry.scan({moepage::test::plugin_dir()});
    component = &registry.find(MP_KIND_ARCH, "deepseek4");
  }
  mp::ArchHandle create(const fs::path& dir, std::vector<std::pair<std::string, std::string>> set = {}) {
    values = std::make_unique<OptionValues>(*component->descriptor, set);
    const std::string d = dir.string();
    mp_arch_create_args args{sizeof(mp_arch_create_args), host.get(), &values->options, d.c_str()};
    return mp::ArchHandle::create(*component->descriptor, component->library, args);
  }
};

}  // namespace

TEST_CASE("describe reports the geometry, the mapped dense bytes and the expert bytes of the catalog") {
  ArchOnly a;
  mp::ArchHandle arch = a.create(moepage::test::fixture_path("released-fp8-fp4"), {{"max_context", "100"}});
  const mp_model_info info = arch.describe();
  const mp_expert_catalog* cat = arch.expert_catalog();
  CHECK(info.vocab_size == 256);
  CHECK(info.n_experts == cat->n_experts);
  CHECK(info.top_k == cat->top_k);
  CHECK(info.d_model == cat->d_model);
  CHECK(info.max_positions == 100);  // the option caps the sequence
  uint64_t per_expert = 0;
  for (uint32_t p = 0; p < cat->n_parts; ++p) per_expert += cat->part_bytes[p];
  uint32_t layers = 0;
  for (uint32_t l = 0; l < cat->n_layers; ++l) layers += cat->has_experts[l];
  CHECK(info.expert_bytes == uint64_t(layers) * cat->n_experts * per_expert);
  // Dense bytes: every checkpoint byte that is not an expert and not a header, as far as the
  // forward pass reads it, so at most the files minus the experts.
  uint64_t files = 0;
  for (uint32_t f = 0; f < cat->n_files; ++f) files += fs::file_size(cat->files[f]);
  CHECK(info.dense_bytes > 0);
  CHECK(info.dense_bytes + info.expert_bytes <= files);
  CHECK(info.dense_bytes + info.expert_bytes > files * 9 / 10);
}

// Output structs (host_api.h): an older host's smaller struct gets only its prefix, struct_size
// left as it set it; struct_size 0 is refused and nothing is written.
TEST_CASE("describe and stats keep to the caller's struct_size and refuse struct_size 0") {
  ArchOnly a;
  mp::ArchHandle arch = a.create(moepage::test::fixture_path("released-fp8-fp4"), {{"max_context", "100"}});
  const mp_arch_vtable* v = a.component->descriptor->arch;
  const mp_model_info info = moepage::test::check_output_struct<mp_model_info>(
      [&](mp_model_info* out) { return v->describe(arch.instance(), out); }, offsetof(mp_model_info, max_positions));
  CHECK(info.vocab_size == 256);
  const mp_arch_stats stats = moepage::test::check_output_struct<mp_arch_stats>(
      [&](mp_arch_stats* out) { return v->stats(arch.instance(), out); }, offsetof(mp_arch_stats, routed_experts));
  CHECK(stats.tokens == 0);
}

TEST_CASE("summary shows the config, the layer schedule and the bytes per expert") {
  ArchOnly a;
  mp::ArchHandle arch = a.create(moepage::test::fixture_path("hc4-mixed"));
  const auto text = arch.summary();
  REQUIRE(text.has_value());
  CHECK(text->find("layer schedule") != std::string::npos);
  CHECK(text->find("compressed_sparse_attention") != std::string::npos);
  CHECK(text->find("hash_moe") != std::string::npos);
  CHECK(text->find("bytes per expert") != std::string::npos);
}

TEST_CASE("forward before bind_pager is an error that says to bind a pager first") {
  ArchOnly a;
  mp::ArchHandle arch = a.create(moepage::test::fixture_path("hc2-sigmoid"));
  std::vector<float> logits(arch.describe().vocab_size);
  const int32_t token = 3;
  CHECK_THROWS_WITH_AS(arch.forward(std::span<const int32_t>(&token, 1), logits.data(), MP_FORWARD_LAST_LOGITS),
                       doctest::Contains("forward before bind_pager"), mp::PluginError);
}

TEST_CASE("a token outside the vocabulary and a sequence past max_context are invalid-arg errors") {
  moepage::test::PluginStack stack(moepage::test::fixture_path("hc2-sigmoid"), "resident", {{"max_context", "4"}});
  std::vector<float> logits(size_t(stack.info.vocab_size) * 8);
  const std::vector<int32_t> bad{1, int32_t(stack.info.vocab_size)};
  CHECK_THROWS_WITH_AS(stack.arch.forward(bad, logits.data(), MP_FORWARD_LAST_LOGITS),
                       doctest::Contains("outside the vocabulary"), mp::PluginError);
  stack.arch.reset_sequence();
  const std::vector<int32_t> five{1, 2, 3, 4, 5};
  CHECK_THROWS_WITH_AS(stack.arch.forward(five, logits.data(), MP_FORWARD_LAST_LOGITS),
                       doctest::Contains("exceed max_context 4"), mp::PluginError);
}

TEST_CASE("max_batch cuts a prompt into chunks without changing its logits, and out-of-range options are refused") {
  const std::vector<int32_t> prompt{1, 17, 30, 4, 42, 7, 99};
  std::vector<float> whole, chunked;
  for (const char* batch : {"64", "2"}) {
    moepage::test::PluginStack stack(moepage::test::fixture_path("hc2-sigmoid"), "resident", {{"max_batch", batch}});
    std::vector<float>& logits = std::string(batch) == "64" ? whole : chunked;
    logits.resize(size_t(stack.info.vocab_size) * prompt.size());
    stack.arch.forward(prompt, logits.data(), MP_FORWARD_ALL_LOGITS);
  }
  REQUIRE(whole.size() == chunked.size());
  for (size_t i = 0; i < whole.size(); ++i) REQUIRE(chunked[i] == doctest::Approx(whole[i]).epsilon(1e-4));
  ArchOnly a;
  CHECK_THROWS_WITH_AS(a.create(moepage::test::fixture_path("hc2-sigmoid"), {{"max_batch", "0"}}),
                       doctest::Contains("option 'max_batch' must be 1 to 4096, got 0"), mp::PluginError);
  CHECK_THROWS_WITH_AS(a.create(moepage::test::fixture_path("hc2-sigmoid"), {{"matrix_min_tokens", "-1"}}),
                       doctest::Contains("option 'matrix_min_tokens' must be 0 (never) to 65536, got -1"),
                       mp::PluginError);
  for (const char* stages : {"1", "5", "-1"}) {
    const std::string want = std::string("option 'gemv_stages' must be 0 (registers) or 2 to 4, got ") + stages;
    CHECK_THROWS_WITH_AS(a.create(moepage::test::fixture_path("hc2-sigmoid"), {{"gemv_stages", stages}}),
                         doctest::Contains(want.c_str()), mp::PluginError);
  }
  CHECK_NOTHROW(a.create(moepage::test::fixture_path("hc2-sigmoid"), {{"gemv_stages", "0"}}));
  CHECK_THROWS_WITH_AS(a.create(moepage::test::fixture_path("hc2-sigmoid"), {{"library_min_tokens", "-2"}}),
                       doctest::Contains("option 'library_min_tokens' must be 0 (never) to 65536, got -2"),
                       mp::PluginError);
  for (const char* ms : {"-1", "3600001"}) {
    const std::string want = std::string("option 'slot_reply_timeout_ms' must be 0 (no watch) to 3600000, got ") + ms;
    CHECK_THROWS_WITH_AS(a.create(moepage::test::fixture_path("hc2-sigmoid"), {{"slot_reply_timeout_ms", ms}}),
                         doctest::Contains(want.c_str()), mp::PluginError);
  }
  CHECK_NOTHROW(a.create(moepage::test::fixture_path("hc2-sigmoid"), {{"slot_reply_timeout_ms", "0"}}));
}

TEST_CASE("create on a folder without config.json names the missing file") {
  ArchOnly a;
  const moepage::test::TempDir dir("ds4-plugin-empty");
  CHECK_THROWS_WITH_AS(a.create(dir.path()), doctest::Contains("config.json"), mp::PluginError);
}

TEST_CASE("create names the config.json key that is wrong") {
  ArchOnly a;
  const moepage::test::TempDir dir("ds4-plugin-badkey");
  std::string text = moepage::test::read_file(moepage::test::fixture_path("hc2-sigmoid") / "config.json");
  const std::string key = "\"hidden_size\":";
  const size_t at = text.find(key);
  REQUIRE(at != std::string::npos);
  text.insert(at + key.size(), " \"wide\", \"unused_hidden_size\":");
  dir.write("config.json", text);
  CHECK_THROWS_WITH_AS(a.create(dir.path()), doctest::Contains("hidden_size"), mp::PluginError);
}

TEST_CASE("the arch declares it can synthesize and rejects an unknown expert dtype") {
  ArchOnly a;
  CHECK((a.component->descriptor->capabilities & MP_CAP_SYNTHESIZE) != 0);
  const moepage::test::TempDir dir("ds4-plugin-synth");
  const std::string out = (dir / "model").string();
  mp_synth_request req{sizeof(mp_synth_request), "tiny", out.c_str(), 1, 0, 0, "fp5", 0};
  CHECK_THROWS_WITH_AS(mp::ArchHandle::synthesize(*a.component->descriptor, a.host.get(), req),
                       doctest::Contains("'fp5'"), mp::PluginError);
}
