// Loading a plugin, step by step, each failure a refusal naming the file and both ABI versions:
//  1. Read the file's dynamic symbol table (elf_symbols.cpp) without loading it. This is chosen
//     over a dlopen(RTLD_LAZY) probe because it runs none of the file's code (no static
//     constructors of an arbitrary file), and over boost::dll::library_info because Boost 1.74's
//     reads .symtab, which stripped (installed) libraries lack; see elf_symbols.hpp.
//  2. Load with RTLD_NOW | RTLD_LOCAL: unresolved symbols fail here, not mid-run, and nothing the
//     plugin defines can interpose on the core or on another plugin.
//  3. Call moepage_plugin_query, then check the ABI version, then every descriptor.
// The library handle lives in a shared_ptr<void> whose deleter unloads it; every accepted
// component and every instance created from it holds a copy.
#include "host/plugin_loader.hpp"

#include <algorithm>
#include <exception>
#include <string_view>
#include <system_error>

#include <boost/dll/shared_library.hpp>

#include "host/elf_symbols.hpp"
#include "host/log.hpp"
#include "moepage/cpp/abi_tables.hpp"
#include "moepage/cpp/host_handles.hpp"

namespace moepage::host {
namespace {

std::string versions(const mp_host_api* host, const std::string& plugin_abi) {
  return "(host ABI " + std::to_string(host->abi_major) + "." + std::to_string(host->abi_minor) + ", plugin ABI " +
         plugin_abi + ")";
}

class Checker {
 public:
  Checker(const std::filesystem::path& file, const mp_host_api* host, LoadResult& out)
      : file_(file), host_(host), out_(out) {}

  void set_plugin_abi(uint32_t major, uint32_t minor) {
    plugin_abi_ = std::to_string(major) + "." + std::to_string(minor);
  }

  void refuse(const std::string& reason) { refuse_component("", reason, false); }

  void refuse_component(const std::string& component, const std::string& reason, bool quiet) {
    Refusal r;
    r.path = file_;
    r.component = component;
    r.message = "refused plugin " + file_.string() + (component.empty() ? "" : " component " + component) + ": " +
                reason + " " + versions(host_, plugin_abi_);
    r.quiet = quiet;
    if (quiet) logger("loader")->debug("{}", r.message);
    else logger("loader")->warn("{}", r.message);
    out_.refusals.push_back(std::move(r));
  }

 private:
  const std::filesystem::path& file_;
  const mp_host_api* host_;
  LoadResult& out_;
  std::string plugin_abi_ = "unknown";
};

// Step 1: the entry symbol must be exported before we run anything from the file.
bool has_entry_symbol(const std::filesystem::path& file, Checker& check) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec)) {
    check.refuse("not a regular file (missing, or a directory)");
    return false;
  }
  try {
    if (elf_exports_function(file, MP_PLUGIN_ENTRY_SYMBOL)) return true;
    check.refuse("missing entry symbol '" MP_PLUGIN_ENTRY_SYMBOL "'");
  } catch (const std::exception& e) {
    check.refuse(e.what());
  }
  return false;
}

std::shared_ptr<void> open_library(const std::filesystem::path& file, Checker& check) {
  try {
    auto lib = std::make_unique<boost::dll::shared_library>(
        file, boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local);
    const std::string path = file.string();
    return std::shared_ptr<boost::dll::shared_library>(lib.release(), [path](boost::dll::shared_library* l) {
      delete l;  // dlclose
      try {
        logger("loader")->debug("unloaded plugin library {}", path);
      } catch (...) {
      }
    });
  } catch (const std::exception& e) {
    check.refuse(std::string("load failed: ") + e.what());
    return nullptr;
  }
}

// "" when the option table is well formed, otherwise what is wrong with it.
// The table is walked with the stride of its first element's struct_size (host_api.h).
std::string option_table_problem(const mp_component_descriptor& d) {
  if (d.n_options == 0) return {};
  if (d.options == nullptr) return "declares " + std::to_string(d.n_options) + " options but no option table";
  std::vector<mp_option_def> table;
  try {
    table = mp::option_table(d);
  } catch (const mp::Error& e) {
    return e.what();
  }
  for (uint32_t i = 0; i < table.size(); ++i) {
    const mp_option_def& o = table[i];
    if (o.name == nullptr || *o.name == '\0') return "option #" + std::to_string(i) + " has no name";
    if (o.type < MP_OPT_BOOL || o.type > MP_OPT_ENUM)
      return "option '" + std::string(o.name) + "' has unknown type " + std::to_string(o.type);
    if (o.type == MP_OPT_ENUM && (o.choices == nullptr || *o.choices == '\0'))
      return "enum option '" + std::string(o.name) + "' has no choices";
  }
  return {};
}

void check_component(const mp_component_descriptor& d, const mp_plugin_manifest& m, const mp_host_api* host,
                     const std::filesystem::path& file, const std::shared_ptr<void>& library, Checker& check,
                     LoadResult& out) {
  const std::string label = d.name != nullptr ? mp::detail::label_of(d) : std::string(mp::kind_name(d.kind)) + " ?";
  if (d.kind != MP_KIND_ARCH && d.kind != MP_KIND_PAGER && d.kind != MP_KIND_TRANSPORT)
    return check.refuse_component(label, "unknown component kind " + std::to_string(d.kind), false);
  if (d.name == nullptr || *d.name == '\0') return check.refuse_component(label, "component has no name", false);
  if (std::string_view(d.name) == kAutoName)
    return check.refuse_component(label, "'auto' is reserved: profiles use it to let the host choose", false);
  if (mp::abi::vtable_of(d) == nullptr)
    return check.refuse_component(label, std::string("no ") + mp::kind_name(d.kind) + " vtable", false);
  // Required callbacks come from the one table of mp::abi, judged by the minor the plugin declares.
  if (const std::string problem = mp::abi::vtable_problem(d, m.abi_minor); !problem.empty())
    return check.refuse_component(label, problem, false);
  if (const std::string problem = option_table_problem(d); !problem.empty())
    return check.refuse_component(label, problem, false);
  int32_t score = 0;
  if (d.score != nullptr) {
    try {
      score = d.score(host);
    } catch (...) {
      score = 0;
    }
    if (score <= 0) return check.refuse_component(label, "score() is 0: unusable on this host", true);
  }
  LoadedComponent c;
  c.descriptor = &d;
  c.path = file;
  c.plugin_name = m.plugin_name != nullptr ? m.plugin_name : "";
  c.plugin_version = m.version != nullptr ? m.version : "";
  c.abi_major = m.abi_major;
  c.abi_minor = m.abi_minor;
  c.score = score;
  c.library = library;
  out.components.push_back(std::move(c));
}

}  // namespace

LoadResult load_plugin(const std::filesystem::path& file, const mp_host_api* host) {
  LoadResult out;
  Checker check(file, host, out);
  if (!has_entry_symbol(file, check)) return out;
  std::shared_ptr<void> library = open_library(file, check);
  if (!library) return out;

  mp_plugin_query_fn query = nullptr;
  try {
    auto* lib = static_cast<boost::dll::shared_library*>(library.get());
    query = &lib->get<mp_status(const mp_host_api*, mp_plugin_manifest*)>(MP_PLUGIN_ENTRY_SYMBOL);
  } catch (const std::exception& e) {
    check.refuse(std::string("entry symbol cannot be resolved: ") + e.what());
    return out;
  }

  mp_plugin_manifest m{};
  m.struct_size = sizeof m;
  mp_status s = MP_ERR_INTERNAL;
  try {
    s = query(host, &m);
  } catch (const std::exception& e) {
    check.refuse(std::string(MP_PLUGIN_ENTRY_SYMBOL " threw: ") + e.what());
    return out;
  } catch (...) {
    check.refuse(MP_PLUGIN_ENTRY_SYMBOL " threw an unknown exception");
    return out;
  }
  if (s != MP_OK) {
    check.refuse(std::string(MP_PLUGIN_ENTRY_SYMBOL " returned ") + mp_status_name(s));
    return out;
  }
  check.set_plugin_abi(m.abi_major, m.abi_minor);
  if (m.abi_major != host->abi_major) {
    check.refuse("ABI major version mismatch");
    return out;
  }
  if (m.abi_minor > host->abi_minor) {
    check.refuse("plugin needs a newer host (ABI minor version is newer)");
    return out;
  }
  if (m.n_components == 0 || m.components == nullptr) {
    check.refuse("manifest declares no components");
    return out;
  }
  // Descriptors are walked with the stride the plugin compiled them with (their struct_size), so
  // a later host whose descriptor has grown still reads a v1 plugin's array correctly.
  const uint32_t stride = m.components[0].struct_size;
  if (stride < sizeof(mp_component_descriptor)) {
    check.refuse("component descriptor struct_size " + std::to_string(stride) + " is smaller than ABI v1's " +
                 std::to_string(sizeof(mp_component_descriptor)));
    return out;
  }
  const auto* base = reinterpret_cast<const unsigned char*>(m.components);
  for (uint32_t i = 0; i < m.n_components; ++i) {
    const auto& d = *reinterpret_cast<const mp_component_descriptor*>(base + size_t{i} * stride);
    if (d.struct_size != stride) {
      check.refuse_component("#" + std::to_string(i), "descriptor struct_size differs from the first one's", false);
      continue;
    }
    check_component(d, m, host, file, library, check, out);
  }
  return out;
}

}  // namespace moepage::host
