// Transport checks of the bytes themselves: byte-exact reads of random, overlapping and boundary
// ranges, in one batch, by priority, out of order, from several threads, and from a newer
// caller whose requests are larger than this SDK's.
#include <cstring>
#include <thread>

#include "conform/transport_fixture.hpp"

namespace moepage::conform {
namespace {

void random_batch(TransportContext& ctx) {
  uint32_t f = 0;
  mp::TransportHandle t = ctx.make_open(f);
  std::vector<Read> reads = ctx.reads(64, 96 * 1024);
  reads.emplace_back(4097, (uint64_t{3} << 20) / 2 + 3, 5);  // crosses several 1 MiB windows and chunks
  t.wait(submit(t, reads, f));
  verify_all(reads, ctx.file, "batch");
}

void prefetch_reads(TransportContext& ctx) {
  uint32_t f = 0;
  mp::TransportHandle t = ctx.make_open(f);
  std::vector<Read> reads = ctx.reads(16, 64 * 1024);
  t.wait(submit(t, reads, f, MP_READ_PREFETCH));
  verify_all(reads, ctx.file, "prefetch");
}

void reverse_order(TransportContext& ctx) {
  uint32_t f = 0;
  mp::TransportHandle t = ctx.make_open(f);
  std::vector<std::vector<Read>> batches;
  std::vector<mp_ticket> tickets;
  for (int i = 0; i < 8; ++i) batches.push_back(ctx.reads(4, 128 * 1024));
  for (auto& b : batches) tickets.push_back(submit(t, b, f));
  for (size_t i = tickets.size(); i-- > 0;) t.wait(tickets[i]);
  for (const auto& b : batches) verify_all(b, ctx.file, "reverse-order");
}

void four_threads(TransportContext& ctx) {
  uint32_t f = 0;
  mp::TransportHandle t = ctx.make_open(f);
  std::vector<std::string> errors(4);
  std::vector<std::thread> threads;
  for (int w = 0; w < 4; ++w) {
    threads.emplace_back([&, w] {
      try {
        std::mt19937_64 local(ctx.config.seed * 31 + static_cast<uint64_t>(w));
        for (int round = 0; round < 12; ++round) {
          std::vector<Read> reads = random_reads(local, 4, 32 * 1024);
          t.wait(submit(t, reads, f));
          verify_all(reads, ctx.file, "thread " + std::to_string(w));
        }
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(w)] = e.what();
      }
    });
  }
  for (auto& th : threads) th.join();
  for (const std::string& e : errors) expect(e.empty(), e);
}

void overlapping(TransportContext& ctx) {
  uint32_t f = 0;
  mp::TransportHandle t = ctx.make_open(f);
  std::vector<Read> reads;
  for (uint64_t i = 0; i < 8; ++i) reads.emplace_back(100000 + i * 777, 20000, i);
  reads.emplace_back(100000, 20000, 0);  // the same range twice
  t.wait(submit(t, reads, f));
  verify_all(reads, ctx.file, "overlapping");
}

void boundaries(TransportContext& ctx) {
  uint32_t f = 0;
  mp::TransportHandle t = ctx.make_open(f);
  std::vector<Read> reads;
  reads.emplace_back(0, 1, 1);
  reads.emplace_back(kTransportFileBytes - 1, 1, 2);
  reads.emplace_back(0, kTransportFileBytes, 0);
  reads.emplace_back(kTransportFileBytes - 5000, 5000, 7);
  t.wait(submit(t, reads, f));
  verify_all(reads, ctx.file, "boundary");
}

// A caller built against a later minor whose mp_read_request has grown: its elements are 24 bytes
// larger, the new bytes garbage to this transport. The stride is the first element's struct_size.
void newer_callers_stride(TransportContext& ctx) {
  uint32_t f = 0;
  mp::TransportHandle t = ctx.make_open(f);
  std::vector<Read> reads = ctx.reads(9, 20000);
  constexpr size_t kStride = sizeof(mp_read_request) + 24;
  std::vector<unsigned char> array(kStride * reads.size(), 0xEE);
  for (size_t i = 0; i < reads.size(); ++i) {
    mp_read_request r = reads[i].request(f);
    r.struct_size = kStride;
    std::memcpy(array.data() + i * kStride, &r, sizeof r);
  }
  const auto* first = reinterpret_cast<const mp_read_request*>(array.data());
  mp_ticket ticket = 0;
  const mp_status s = ctx.vtable().submit(t.ref().self, first, static_cast<uint32_t>(reads.size()), &ticket);
  expect(s == MP_OK, "submit refused requests of struct_size " + std::to_string(kStride) + " (" + mp_status_name(s) +
                         "): " + ctx.vtable().last_error(t.ref().self));
  t.wait(ticket);
  verify_all(reads, ctx.file, "stride " + std::to_string(kStride));
}

}  // namespace

std::vector<TransportCheck> transport_read_checks() {
  return {
      {"random ranges in one batch are byte-exact and stay inside their destination", &random_batch},
      {"prefetch-priority reads are byte-exact", &prefetch_reads},
      {"tickets waited for in reverse order of submission are each byte-exact", &reverse_order},
      {"four threads submitting and waiting at once all get byte-exact data", &four_threads},
      {"overlapping ranges in one batch are each byte-exact", &overlapping},
      {"the first byte, the last byte, the whole file and a range ending at the end are exact", &boundaries},
      {"requests from a newer caller (a larger struct_size) are walked with that stride", &newer_callers_stride, 4},
  };
}

}  // namespace moepage::conform
