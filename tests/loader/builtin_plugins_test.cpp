// The built-in components whose behaviour arrives with later issues: each is discovered by name
// from the build's plugin folder, shows its option table, and refuses to run with a clear
// "not available yet" instead of pretending.
#include <doctest/doctest.h>

#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "host/host_api.hpp"
#include "host/registry.hpp"
#include "moepage/cpp/host_handles.hpp"
#include "support/option_values.hpp"
#include "support/test_paths.hpp"

using moepage::host::HostApi;
using moepage::host::Registry;
using moepage::test::OptionValues;
namespace fs = std::filesystem;

namespace {

// The option table as "name:type:default" lines, for compact comparisons.
std::vector<std::string> option_table(const mp_component_descriptor& d) {
  std::vector<std::string> out;
  for (uint32_t i = 0; i < d.n_options; ++i) {
    const mp_option_def& o = d.options[i];
    out.push_back(std::string(o.name) + ":" + std::to_string(o.type) + ":" +
                  (o.default_value != nullptr ? o.default_value : "<required>"));
    CHECK(o.help != nullptr);
    CHECK(std::strlen(o.help) > 0);
  }
  return out;
}

struct Builtins {
  HostApi host;
  Registry registry{host.get()};
  Builtins() { registry.scan({moepage::test::plugin_dir()}); }
};

std::string pager_create_error(Builtins& b, const char* name, std::vector<std::pair<std::string, std::string>> set) {
  const auto& c = b.registry.find(MP_KIND_PAGER, name);
  OptionValues values(*c.descriptor, std::move(set));
  mp_pager_create_args args{};
  args.struct_size = sizeof args;
  args.host = b.host.get();
  args.options = &values.options;
  try {
    mp::PagerHandle::create(*c.descriptor, c.library, args);
  } catch (const mp::PluginError& e) {
    return std::to_string(e.status()) + " " + e.what();
  }
  return "created";
}

}  // namespace

TEST_CASE("the resident pager is registered, has no options and refuses to start without a catalog") {
  Builtins b;
  CHECK(b.registry.find(MP_KIND_PAGER, "resident").descriptor->n_options == 0);
  const std::string error = pager_create_error(b, "resident", {});
  CHECK(error.rfind("1 pager 'resident': create failed (invalid-arg): ", 0) == 0);
  CHECK(error.find("no expert catalog") != std::string::npos);
}

TEST_CASE("the lru pager declares budget, reserve, policy and the split and checks them before anything else") {
  Builtins b;
  const auto& c = b.registry.find(MP_KIND_PAGER, "lru");
  CHECK(option_table(*c.descriptor) == std::vector<std::string>{"budget:5:auto", "reserve:4:8GiB", "policy:7:lru",
                                                                "split:7:uniform",
                                                                "split_trace:6:", "split_objective:7:reads"});
  CHECK(std::string(c.descriptor->options[2].choices) == "lru|lfu|lfru|s3fifo");
  // Without an expert catalog there is nothing to size a pool for: a clear invalid-arg, no crash.
  // (Option values are validated by the host against this table before create; see tests/profile.)
  CHECK(pager_create_error(b, "lru", {}) ==
        "1 pager 'lru': create failed (invalid-arg): pager create: no expert catalog");
}

TEST_CASE("the adapter-prefetch pager requires an adapter path, defaults top_m to 0 and observes hidden states") {
  Builtins b;
  const auto& c = b.registry.find(MP_KIND_PAGER, "adapter-prefetch");
  CHECK(option_table(*c.descriptor) ==
        std::vector<std::string>{"budget:5:auto", "reserve:4:8GiB", "policy:7:lfru", "split:7:uniform",
                                 "split_trace:6:", "split_objective:7:reads", "adapter:6:<required>", "top_m:1:0"});
  CHECK((c.descriptor->capabilities & MP_CAP_PREFETCH) != 0);
  CHECK((c.descriptor->pager->observe != nullptr));
  CHECK(pager_create_error(b, "adapter-prefetch", {{"adapter", "/a.hfadpt"}}).rfind("1 pager 'adapter-prefetch'", 0) ==
        0);
}

TEST_CASE("the pinned-async transport declares its staging options and offers ticket events") {
  Builtins b;
  const auto& c = b.registry.find(MP_KIND_TRANSPORT, "pinned-async");
  CHECK(option_table(*c.descriptor) ==
        std::vector<std::string>{"threads:1:4", "staging:4:64MiB", "ring:1:2", "queue_depth:1:16"});
  CHECK((c.descriptor->transport->ticket_event != nullptr));
  OptionValues values(*c.descriptor, {});
  auto transport = mp::TransportHandle::create(*c.descriptor, c.library, b.host.get(), &values.options);
  (void)transport;
}

TEST_CASE("the deepseek4 arch recognises a DeepSeek-V4 config.json and names it when it is missing") {
  Builtins b;
  const auto& c = b.registry.find(MP_KIND_ARCH, "deepseek4");
  CHECK(option_table(*c.descriptor) == std::vector<std::string>{"threads:1:0",
                                                                "max_context:1:4096",
                                                                "max_batch:1:64",
                                                                "matrix_min_tokens:1:8",
                                                                "matrix_min_expert_tokens:1:2",
                                                                "matrix_split:0:true",
                                                                "matrix_expert_precision:7:fp16",
                                                                "matrix_expert_stream:0:true",
                                                                "matrix_single_token:0:false",
                                                                "gemv_stages:1:3",
                                                                "library_min_tokens:1:512",
                                                                "library_weight_cache_mib:1:0",
                                                                "attention_output_parts:0:false",
                                                                "device_routing:0:true",
                                                                "observe_after_attention:0:false",
                                                                "predictor_on_device:0:false",
                                                                "timeline:0:false",
                                                                "prompt_shared_expert:7:auto",
                                                                "decode_shared_expert:7:beside",
                                                                "urgent_sinkhorn:0:false",
                                                                "overlap_launches:0:true",
                                                                "paged_band:1:32",
                                                                "routing_replay:6:",
                                                                "replay_predictions_at:7:observe",
                                                                "replay_predictions:1:6",
                                                                "hits_first:0:true",
                                                                "defer_acquire_finish:0:false",
                                                                "direct_hits:0:true",
                                                                "run_ahead:0:false",
                                                                "slot_table:0:false",
                                                                "slot_reply_timeout_ms:1:10000",
                                                                "slot_queue_ahead_layers:1:8",
                                                                "prompt_staging:0:true"});

  const fs::path dir = fs::temp_directory_path() / "moepage-loader-test-ds4";
  fs::create_directories(dir);
  const auto probe = [&](const std::string& config) {
    std::ofstream(dir / "config.json") << config;
    return mp::ArchHandle::probe(*c.descriptor, b.host.get(), dir.string());
  };
  CHECK(probe(R"({"model_type": "deepseek_v4", "hidden_size": 64})") > 0);
  CHECK(probe(R"({"model_type": "llama"})") == 0);
  CHECK(probe(R"({"model_type": )") == 0);  // malformed: not ours, and no crash
  CHECK(probe("[1, 2]") == 0);
  fs::remove(dir / "config.json");
  CHECK(mp::ArchHandle::probe(*c.descriptor, b.host.get(), dir.string()) == 0);

  OptionValues values(*c.descriptor, {});
  mp_arch_create_args args{};
  args.struct_size = sizeof args;
  args.host = b.host.get();
  args.options = &values.options;
  args.checkpoint_dir = dir.c_str();
  CHECK_THROWS_WITH_AS(mp::ArchHandle::create(*c.descriptor, c.library, args), doctest::Contains("config.json"),
                       mp::PluginError);
}
