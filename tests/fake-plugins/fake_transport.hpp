// A transport that needs no files: reads "produce" byte (offset + i) & 0xff, so tests can check
// destinations without creating data. Shared by several fake plugins.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "moepage/cpp/plugin_adapter.hpp"

namespace fake {

class PatternTransport {
 public:
  PatternTransport(const mp_host_api* host, const mp::Options&) : log_(host, "fake-transport") {}
  ~PatternTransport() { log_.info("destroyed transport"); }

  mp_status open(const char* path, uint32_t* file) {
    if (path == nullptr || file == nullptr) throw mp::Error(MP_ERR_INVALID_ARG, "open: path or file is NULL");
    paths_.emplace_back(path);
    *file = static_cast<uint32_t>(paths_.size() - 1);
    return MP_OK;
  }
  mp_status submit(const mp_read_request* requests, uint32_t n, mp_ticket* ticket) {
    for (uint32_t r = 0; r < n; ++r) {
      const mp_read_request& q = requests[r];
      if (q.file >= paths_.size()) throw mp::Error(MP_ERR_INVALID_ARG, mp::format("submit: unknown file {}", q.file));
      auto* dst = static_cast<unsigned char*>(q.dst) + q.dst_offset;
      for (uint64_t i = 0; i < q.length; ++i) dst[i] = static_cast<unsigned char>((q.offset + i) & 0xff);
      ++requests_;
    }
    *ticket = ++last_ticket_;
    return MP_OK;
  }
  mp_status wait(mp_ticket ticket) { return poll(ticket); }
  mp_status poll(mp_ticket ticket) {
    if (ticket == 0 || ticket > last_ticket_)
      throw mp::Error(MP_ERR_INVALID_ARG, mp::format("unknown ticket {}", ticket));
    return MP_OK;
  }
  mp_status stats(mp_transport_stats* out) {
    mp_transport_stats s{};
    s.struct_size = sizeof s;
    s.requests = requests_;
    mp::write_out(out, s, "fake-transport: stats");
    return MP_OK;
  }

 private:
  mp::HostLog log_;
  std::vector<std::string> paths_;
  mp_ticket last_ticket_ = 0;
  uint64_t requests_ = 0;
};

inline constexpr mp_option_def kPatternOptions[] = {
    mp::option(MP_OPT_INT, "threads", "1", "unused; present so option tables are exercised"),
};

// A PatternTransport that ranks itself kScore on every host (for `plugin: auto`).
template <int32_t kScore>
class ScoredTransport : public PatternTransport {
 public:
  using PatternTransport::PatternTransport;
  static int32_t score(const mp_host_api*) { return kScore; }
};

// PatternTransport's vtable after `edit` (a callback removed, a shorter struct_size); built once
// per edit and kept for the life of the library.
template <class Edit>
const mp_transport_vtable* edited_vtable(Edit edit) {
  static const mp_transport_vtable v = [&] {
    mp_transport_vtable copy = *mp::transport_vtable<PatternTransport>();
    edit(copy);
    return copy;
  }();
  return &v;
}

struct Unchanged {
  template <class T>
  void operator()(T&) const {}
};

// The body of moepage_plugin_query for a plugin "name" 1.0.0 with one PatternTransport of the
// same name that breaks a rule: `edit_descriptor` changes its descriptor once, and
// `edit_manifest` the manifest handed to the host.
template <class EditDescriptor, class EditManifest = Unchanged>
mp_status query_one_transport(mp_plugin_manifest* manifest, const char* name, const char* description,
                              EditDescriptor edit_descriptor, EditManifest edit_manifest = {}) {
  static const std::array<mp_component_descriptor, 1> components = [&] {
    mp_component_descriptor d = mp::make_transport_descriptor<PatternTransport>(name, "1.0.0", description, MP_CAP_CPU);
    edit_descriptor(d);
    return std::to_array({d});
  }();
  const mp_status s = mp::fill_manifest(manifest, name, "1.0.0", components);
  if (s == MP_OK) edit_manifest(*manifest);
  return s;
}

}  // namespace fake
