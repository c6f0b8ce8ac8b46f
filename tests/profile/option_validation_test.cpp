#include <doctest/doctest.h>

#include <array>
#include <string>

#include "profile/option_validation.hpp"

using moepage::profile::ComponentSpec;
using moepage::profile::OptionSetting;
using moepage::profile::ProfileError;
using moepage::profile::ResolvedOptions;
using moepage::profile::validate_options;

namespace {

constexpr uint32_t kDef = sizeof(mp_option_def);

// A table shaped like the lru pager's plus one of each remaining type.
const std::array<mp_option_def, 8> kTable{{
    {kDef, MP_OPT_SIZE_OR_AUTO, "budget", "auto", "device bytes for expert slots", nullptr},
    {kDef, MP_OPT_SIZE, "reserve", "8GiB", "bytes kept free", nullptr},
    {kDef, MP_OPT_ENUM, "policy", "lru", "eviction policy", "lru|lfu|lfru"},
    {kDef, MP_OPT_PATH, "adapter", nullptr, "predictor weights", nullptr},
    {kDef, MP_OPT_INT, "top_m", "4", "experts to prefetch", nullptr},
    {kDef, MP_OPT_BOOL, "trace", "false", "record accesses", nullptr},
    {kDef, MP_OPT_FLOAT, "decay", "0.5", "frequency decay", nullptr},
    {kDef, MP_OPT_STRING, "label", "", "free text", nullptr},
}};

ComponentSpec spec_with(std::vector<OptionSetting> options) {
  ComponentSpec spec{"pager", "lru", "p.yaml:1:1", std::move(options)};
  return spec;
}

OptionSetting set(std::string name, std::string text, std::string base_dir = "/profiles") {
  return OptionSetting{std::move(name), std::move(text), std::move(base_dir), "p.yaml:4:3"};
}

std::string validation_error(const ComponentSpec& spec) {
  try {
    validate_options(spec, kTable);
  } catch (const ProfileError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("validated options come in table order with defaults filled and sizes as byte counts") {
  ResolvedOptions options = validate_options(
      spec_with({set("adapter", "adapters/a.bin"), set("reserve", "1GiB"), set("trace", "yes")}), kTable);
  REQUIRE(options.size() == kTable.size());
  CHECK(options.name(0) == "budget");
  CHECK(options.value(0) == "auto");
  CHECK(*options.find("reserve") == "1073741824");
  CHECK(*options.find("policy") == "lru");
  CHECK(*options.find("adapter") == "/profiles/adapters/a.bin");  // against the file that set it
  CHECK(*options.find("top_m") == "4");
  CHECK(*options.find("trace") == "true");
  CHECK(*options.find("label") == "");

  const mp_options* c = options.c_options();
  REQUIRE(c->count == kTable.size());
  CHECK(std::string(c->values[1].name) == "reserve");
  CHECK(std::string(c->values[1].value) == "1073741824");
  CHECK(c->values[1].struct_size == sizeof(mp_option_value));
}

TEST_CASE("a default size is normalised too") {
  ResolvedOptions options = validate_options(spec_with({set("adapter", "/a")}), kTable);
  CHECK(*options.find("reserve") == "8589934592");
}

TEST_CASE("an unknown option names the key, the plugin and the valid keys") {
  const std::string message = validation_error(spec_with({set("adapter", "/a"), set("budgett", "1GiB")}));
  CHECK(message ==
        "p.yaml:4:3: unknown key 'pager.budgett' for pager plugin 'lru' (valid keys: budget, reserve, policy, "
        "adapter, top_m, trace, decay, label)");
}

TEST_CASE("a plugin without options says so for any key") {
  ComponentSpec spec{"pager", "resident", "", {set("budget", "1GiB")}};
  try {
    validate_options(spec, {});
    FAIL("expected an error");
  } catch (const ProfileError& e) {
    CHECK(std::string(e.what()).find("for pager plugin 'resident' (it takes no options)") != std::string::npos);
  }
}

TEST_CASE("a wrongly typed option names the key, the plugin, the expected type and the value") {
  const std::string message = validation_error(spec_with({set("adapter", "/a"), set("top_m", "many")}));
  CHECK(message.find("p.yaml:4:3: pager.top_m: pager plugin 'lru' expects an integer (int), got 'many'") !=
        std::string::npos);
  CHECK(validation_error(spec_with({set("adapter", "/a"), set("trace", "maybe")})).find("expects a bool") !=
        std::string::npos);
  CHECK(validation_error(spec_with({set("adapter", "/a"), set("decay", "half")})).find("expects a number") !=
        std::string::npos);
}

TEST_CASE("a bad size string names the key and the accepted forms") {
  for (const char* bad : {"-1GiB", "8gb", "lots"}) {
    CAPTURE(bad);
    const std::string message = validation_error(spec_with({set("adapter", "/a"), set("reserve", bad)}));
    CHECK(message.find("pager.reserve: pager plugin 'lru' expects a size such as") != std::string::npos);
    CHECK(message.find(std::string("got '") + bad + "'") != std::string::npos);
  }
  // "auto" only where the table allows it.
  CHECK(validation_error(spec_with({set("adapter", "/a"), set("reserve", "auto")})).find("expects a size") !=
        std::string::npos);
  CHECK(validation_error(spec_with({set("adapter", "/a"), set("budget", "auto")})).empty());
}

TEST_CASE("an enum option accepts only its choices") {
  CHECK(validation_error(spec_with({set("adapter", "/a"), set("policy", "lfru")})).empty());
  const std::string message = validation_error(spec_with({set("adapter", "/a"), set("policy", "fifo")}));
  CHECK(message.find("expects one of lru|lfu|lfru") != std::string::npos);
  CHECK(message.find("got 'fifo'") != std::string::npos);
}

TEST_CASE("a required option that is missing is an error naming it and the plugin") {
  const std::string message = validation_error(spec_with({}));
  CHECK(message.find("pager.adapter is required by pager plugin 'lru'") != std::string::npos);
}

TEST_CASE("an invalid default in a plugin's table is reported against the plugin") {
  const std::array<mp_option_def, 1> broken{{{kDef, MP_OPT_SIZE, "reserve", "eight", "", nullptr}}};
  ComponentSpec spec{"transport", "odd", "", {}};
  try {
    validate_options(spec, broken);
    FAIL("expected an error");
  } catch (const ProfileError& e) {
    CHECK(std::string(e.what()).find("transport plugin 'odd' declares default 'eight' for option 'reserve'") !=
          std::string::npos);
  }
}
