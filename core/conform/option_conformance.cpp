// Checks of a component's option table and of the host's validation against it.
#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "conform/conformance.hpp"
#include "moepage/cpp/host_handles.hpp"

namespace moepage::conform {
namespace {

profile::ComponentSpec spec_for(const mp_component_descriptor& d) {
  profile::ComponentSpec spec;
  spec.section = mp::kind_name(d.kind);
  spec.plugin = d.name != nullptr ? d.name : "?";
  spec.plugin_where = "moepage conform";
  return spec;
}

profile::OptionSetting setting(const std::string& name, const std::string& text, const std::string& where) {
  return profile::OptionSetting{name, text, std::filesystem::current_path(), where};
}

}  // namespace

bool creation_check(Checklist& list, const std::string& name, const std::function<void()>& create) {
  try {
    create();
  } catch (const mp::PluginError& e) {
    if (e.status() == MP_ERR_NOT_AVAILABLE) {
      list.skip(name, e.what());
    } else {
      list.record(name, false, e.what());
    }
    return false;
  } catch (const std::exception& e) {
    list.record(name, false, e.what());
    return false;
  }
  list.record(name, true, "");
  return true;
}

profile::ResolvedOptions resolve_options(const mp_component_descriptor& d, const ConformConfig& config) {
  profile::ComponentSpec spec = spec_for(d);
  for (const auto& [name, value] : config.options) spec.options.push_back(setting(name, value, "--option " + name));
  std::sort(spec.options.begin(), spec.options.end(),
            [](const profile::OptionSetting& a, const profile::OptionSetting& b) { return a.name < b.name; });
  return profile::validate_options(spec, mp::option_table(d));
}

namespace {

void check_table_well_formed(const mp_component_descriptor& d) {
  expect(d.n_options == 0 || d.options != nullptr,
         "n_options is " + std::to_string(d.n_options) + " but options is NULL");
  std::vector<mp_option_def> table;
  try {
    table = mp::option_table(d);  // the stride rule: every element's struct_size is the first one's
  } catch (const mp::Error& e) {
    throw CheckFailed(e.what());
  }
  std::set<std::string> seen;
  for (size_t i = 0; i < table.size(); ++i) {
    const mp_option_def& def = table[i];
    const std::string where = "option " + std::to_string(i);
    expect(def.name != nullptr && *def.name != '\0', where + ": no name");
    expect(seen.insert(def.name).second, where + ": name '" + def.name + "' appears twice");
    expect(def.type >= MP_OPT_BOOL && def.type <= MP_OPT_ENUM,
           "option '" + std::string(def.name) + "': unknown type " + std::to_string(def.type));
    expect(def.type != MP_OPT_ENUM || (def.choices != nullptr && *def.choices != '\0'),
           "option '" + std::string(def.name) + "': an enum without choices");
    expect(def.help != nullptr && *def.help != '\0', "option '" + std::string(def.name) + "': no help text");
    if (def.default_value != nullptr) {
      std::string normalised;
      expect(profile::normalise_option_value(def, def.default_value, std::filesystem::current_path(), normalised),
             "option '" + std::string(def.name) + "': default '" + def.default_value + "' is not a valid " +
                 profile::option_type_name(def));
    }
  }
}

void check_resolves(const mp_component_descriptor& d, const ConformConfig& config) {
  profile::ResolvedOptions resolved = resolve_options(d, config);
  expect(resolved.size() == d.n_options,
         "resolved " + std::to_string(resolved.size()) + " options for a table of " + std::to_string(d.n_options));
}

void check_unknown_key_refused(const mp_component_descriptor& d) {
  const std::vector<mp_option_def> table = mp::option_table(d);
  profile::ComponentSpec spec = spec_for(d);
  spec.options.push_back(setting("conform_no_such_option", "1", "moepage conform"));
  try {
    profile::validate_options(spec, table);
  } catch (const profile::ProfileError& e) {
    const std::string message = e.what();
    expect(message.find("conform_no_such_option") != std::string::npos,
           "the error does not name the unknown key: " + message);
    for (const mp_option_def& def : table) {
      expect(message.find(def.name) != std::string::npos,
             "the error does not list the valid key '" + std::string(def.name) + "': " + message);
    }
    return;
  }
  throw CheckFailed("an unknown option was accepted");
}

void check_wrong_type_refused(const mp_component_descriptor& d) {
  const std::vector<mp_option_def> table = mp::option_table(d);
  for (const mp_option_def& def : table) {
    if (def.type != MP_OPT_INT && def.type != MP_OPT_SIZE && def.type != MP_OPT_BOOL && def.type != MP_OPT_ENUM)
      continue;
    profile::ComponentSpec spec = spec_for(d);
    spec.options.push_back(setting(def.name, "conform-not-a-valid-value", "moepage conform"));
    try {
      profile::validate_options(spec, table);
    } catch (const profile::ProfileError& e) {
      expect(std::string(e.what()).find(def.name) != std::string::npos,
             "the error does not name option '" + std::string(def.name) + "': " + e.what());
      return;
    }
    throw CheckFailed("option '" + std::string(def.name) + "' accepted 'conform-not-a-valid-value'");
  }
  // Nothing typed to get wrong: the check holds trivially, and says so.
}

}  // namespace

void run_option_checks(const Component& c, const ConformConfig& config, Checklist& list) {
  const mp_component_descriptor& d = *c.descriptor;
  list.run("the option table is well formed (named, unique, known types, defaults that parse, one stride)",
           [&] { check_table_well_formed(d); });
  list.run("the host resolves the options the component will be created with", [&] { check_resolves(d, config); });
  list.run("the host rejects an unknown option and lists the valid keys", [&] { check_unknown_key_refused(d); });
  list.run("the host rejects a value of the wrong type, naming the option", [&] { check_wrong_type_refused(d); });
}

}  // namespace moepage::conform
