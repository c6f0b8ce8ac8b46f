// What the transport checks share: the component and its host, a generated sample file, and reads
// that land between guard bytes, so a transport that writes outside its destination range fails
// as surely as one that reads wrong bytes.
#pragma once
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "conform/conformance.hpp"
#include "conform/sample_file.hpp"
#include "moepage/cpp/host_handles.hpp"

namespace moepage::conform {

inline constexpr uint8_t kGuard = 0xA5;
inline constexpr uint64_t kGuardBytes = 64;
// Not a multiple of any block size, and larger than common bounce buffers (1 MiB) and chunks.
inline constexpr uint64_t kTransportFileBytes = (uint64_t{5} << 20) + 1234;

// One request as this host's headers lay it out.
mp_read_request read_request(uint32_t file, uint64_t offset, uint64_t length, void* dst, uint64_t dst_offset,
                             int32_t kind, int32_t priority, uint64_t tag);

// One read and the buffer it lands in: [dst_offset filler][data][guard].
struct Read {
  uint64_t offset = 0;
  uint64_t length = 0;
  uint64_t dst_offset = 0;
  std::vector<uint8_t> buffer;

  Read(uint64_t off, uint64_t len, uint64_t dst_off);
  mp_read_request request(uint32_t file, int32_t priority = MP_READ_DEMAND, int32_t kind = MP_MEM_HOST);
  // Byte-exact data, untouched guard bytes before and after.
  void verify(const SampleFile& file, const std::string& what) const;
};

struct TransportContext {
  const Component& component;
  const mp_host_api* host;
  const ConformConfig& config;
  const SampleFile& file;
  std::string path;  // of the sample file
  std::mt19937_64 rng;

  const mp_transport_vtable& vtable() const { return *component.descriptor->transport; }
  uint32_t capabilities() const { return component.descriptor->capabilities; }
  // A new instance with the configured options, on `on` (default: the context's host).
  mp::TransportHandle make(const mp_host_api* on = nullptr) const;
  // A new instance with the sample file open; its handle in `file`.
  mp::TransportHandle make_open(uint32_t& file_handle, const mp_host_api* on = nullptr) const;
  // `count` reads of 1 to max_length bytes at random places, from the context's generator.
  std::vector<Read> reads(size_t count, uint64_t max_length);
};

// Submits one request per read on file handle `file`.
mp_ticket submit(mp::TransportHandle& t, std::vector<Read>& reads, uint32_t file, int32_t priority = MP_READ_DEMAND);
std::vector<Read> random_reads(std::mt19937_64& rng, size_t count, uint64_t max_length);
void verify_all(const std::vector<Read>& reads, const SampleFile& file, const std::string& what);
// The failure of `f`, a call through a handle that must fail.
template <class F>
mp::PluginError expect_plugin_failure(F&& f, const std::string& what) {
  return expect_failure<mp::PluginError>(std::forward<F>(f), what);
}

// One transport check: its sentence, the function, the ABI minor whose rules it checks (a plugin
// that declares an older minor is not held to them), and any further condition.
struct TransportCheck {
  const char* name;
  void (*run)(TransportContext& ctx);
  uint32_t since_minor = 0;
  bool (*applies)(const TransportContext& ctx) = nullptr;  // nullptr: always
};

// The checks of each concern, in the order they run.
std::vector<TransportCheck> transport_read_checks();
std::vector<TransportCheck> transport_rule_checks();
std::vector<TransportCheck> transport_ticket_checks();
std::vector<TransportCheck> transport_device_checks();
std::vector<TransportCheck> transport_lifetime_checks();

}  // namespace moepage::conform
