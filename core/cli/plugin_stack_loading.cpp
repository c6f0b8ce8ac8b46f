#include "cli/plugin_stack_loading.hpp"

#include <chrono>
#include <stdexcept>

namespace moepage::cli {
namespace fs = std::filesystem;

void require_model_folder(const profile::Profile& prof) {
  if (prof.model.empty()) {
    throw std::runtime_error(prof.source.string() + ": no model: set model: in the profile or pass --model DIR");
  }
  if (!fs::is_directory(prof.model)) {
    throw std::runtime_error("model folder " + prof.model.string() + " does not exist or is not a folder");
  }
}

ResolvedStack resolve_stack(const host::Registry& registry, const profile::Profile& prof) {
  ResolvedStack out;
  out.transport = resolve_component(registry, prof.transport, prof.source.string());
  out.pager = resolve_component(registry, prof.pager, prof.source.string());
  out.arch = resolve_arch(registry, prof);
  out.model_dir = prof.model.string();
  return out;
}

LoadedStack create_stack(ResolvedStack& resolved, const mp_host_api* host, const PagerBinder& binder) {
  LoadedStack out;
  host::PluginStack& stack = out.stack;
  const auto start = std::chrono::steady_clock::now();
  const host::LoadedComponent& arch = *resolved.arch.component;
  mp_arch_create_args arch_args{sizeof(mp_arch_create_args), host, resolved.arch.options.c_options(),
                                resolved.model_dir.c_str()};
  stack.arch = mp::ArchHandle::create(*arch.descriptor, arch.library, arch_args);
  out.info = stack.arch.describe();
  out.catalog = stack.arch.expert_catalog();

  const host::LoadedComponent& transport = *resolved.transport.component;
  stack.transport = mp::TransportHandle::create(*transport.descriptor, transport.library, host,
                                                resolved.transport.options.c_options());
  const host::LoadedComponent& pager = *resolved.pager.component;
  mp_pager_create_args pager_args{
      sizeof(mp_pager_create_args), host, resolved.pager.options.c_options(), out.catalog, stack.transport.ref(),
      out.info.dense_bytes};
  stack.pager = mp::PagerHandle::create(*pager.descriptor, pager.library, pager_args);
  stack.arch.bind_pager(binder ? binder(stack.pager, *out.catalog) : stack.pager.ref());
  out.load_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

std::optional<tokenizer::Tokenizer> load_model_tokenizer(const fs::path& model_dir) {
  if (!fs::exists(model_dir / "tokenizer.json")) return std::nullopt;
  return tokenizer::Tokenizer::load(model_dir / "tokenizer.json");
}

}  // namespace moepage::cli
