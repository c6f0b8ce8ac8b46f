#include "conform/transport_fixture.hpp"

namespace moepage::conform {

Read::Read(uint64_t off, uint64_t len, uint64_t dst_off) : offset(off), length(len), dst_offset(dst_off) {
  buffer.assign(dst_offset + length + kGuardBytes, kGuard);
}

mp_read_request read_request(uint32_t file, uint64_t offset, uint64_t length, void* dst, uint64_t dst_offset,
                             int32_t kind, int32_t priority, uint64_t tag) {
  return mp_read_request{sizeof(mp_read_request), file, offset, length, dst, dst_offset, kind, priority, tag};
}

mp_read_request Read::request(uint32_t file, int32_t priority, int32_t kind) {
  return read_request(file, offset, length, buffer.data(), dst_offset, kind, priority, offset + 1);
}

void Read::verify(const SampleFile& file, const std::string& what) const {
  for (uint64_t i = 0; i < dst_offset; ++i) {
    expect(buffer[i] == kGuard, what + ": byte " + std::to_string(i) + " before dst_offset was overwritten");
  }
  const int64_t bad = file.first_mismatch(offset, buffer.data() + dst_offset, length);
  expect(bad < 0, what + ": " + std::to_string(length) + " bytes at offset " + std::to_string(offset) +
                      " differ from the file first at byte " + std::to_string(bad));
  for (uint64_t i = dst_offset + length; i < buffer.size(); ++i) {
    expect(buffer[i] == kGuard, what + ": a byte after the destination range was overwritten");
  }
}

mp::TransportHandle TransportContext::make(const mp_host_api* on) const {
  profile::ResolvedOptions options = resolve_options(*component.descriptor, config);
  return mp::TransportHandle::create(*component.descriptor, component.library, on != nullptr ? on : host,
                                     options.c_options());
}

mp::TransportHandle TransportContext::make_open(uint32_t& file_handle, const mp_host_api* on) const {
  mp::TransportHandle t = make(on);
  file_handle = t.open(path);
  return t;
}

std::vector<Read> TransportContext::reads(size_t count, uint64_t max_length) {
  return random_reads(rng, count, max_length);
}

mp_ticket submit(mp::TransportHandle& t, std::vector<Read>& reads, uint32_t file, int32_t priority) {
  std::vector<mp_read_request> requests;
  for (Read& r : reads) requests.push_back(r.request(file, priority));
  return t.submit(requests);
}

std::vector<Read> random_reads(std::mt19937_64& rng, size_t count, uint64_t max_length) {
  std::vector<Read> reads;
  for (size_t i = 0; i < count; ++i) {
    const uint64_t length = 1 + rng() % max_length;
    const uint64_t offset = rng() % (kTransportFileBytes - length + 1);
    reads.emplace_back(offset, length, rng() % 17);
  }
  return reads;
}

void verify_all(const std::vector<Read>& reads, const SampleFile& file, const std::string& what) {
  for (size_t i = 0; i < reads.size(); ++i) reads[i].verify(file, what + " read " + std::to_string(i));
}

}  // namespace moepage::conform
