// The mapped transport: reads from files mapped and registered with the device (mapped_files.hpp).
//
// A device read is a copy_to_device_async straight from the mapping, issued inside submit() on
// one of two copy streams: demand reads on one, prefetch reads on the other, so a demand copy never
// queues behind speculation (the two share the link while both run). With the option
// prefetch_lane: shared every copy goes on the demand stream in submission order instead: a
// prefetch issued before a demand read then delays it, but never halves its rate. Nothing is
// staged and no thread of ours reads: the copy starts at once. Neighbouring reads of a batch that
// continue each other in the file and in the destination, on one stream, go as one copy, so the
// per-copy cost (bench/results/2026-12-06-one-copy.md measures it) is paid once per run instead
// of once per part. A host read (the CPU device, or a host destination) is a pread of the file
// into the destination, inside submit(), never a touch of the mapping: a file cut short under a
// running process then fails the read instead of faulting the process (the device's copies read
// pages the registration keeps resident).
//
// Tickets: (generation << 32 | slot + 1). A ticket's copies end with one event (recorded on the
// demand stream after it waited for the prefetch stream when the batch used both); wait()
// synchronises it, poll() queries it, ticket_event() hands it out, and the first request that
// failed names the ticket's error (a range past the end of its file, a refused copy or read).
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "mapped_files.hpp"
#include "moepage/cpp/host_clock.hpp"
#include "moepage/cpp/plugin_adapter.hpp"
#include "moepage/cpp/structs.hpp"
#include "moepage/cpp/transport_counters.hpp"
#include "ticket_outcome.hpp"
#include "ticket_slots.hpp"

namespace moepage::transport {

class MappedTransport {
 public:
  // Throws mp::Error: a GPU host without register_host (ABI 1.6), or no streams and events there.
  MappedTransport(const mp_host_api* host, const mp::Options& options);
  // Waits for the copies still running before the files are unregistered and unmapped.
  ~MappedTransport();
  MP_TRANSPORT_MEMBERS(MappedTransport);
  // The event after the ticket's copies (recorded at once when it has none).
  mp_status ticket_event(mp_ticket ticket, mp_event* out);

 private:
  struct Ticket : TicketSlot {
    bool copies = false;  // device copies were issued: `event` follows them
    uint32_t n_requests = 0;
    TicketOutcome outcome;
    uint32_t failed = 0;       // requests that failed
    mp_event event = nullptr;  // made once per slot, reused by its generations
  };

  // The copy stream of a read: 1 for a prefetch with prefetch_lane: own, else 0.
  int lane_of(const mp_read_request& r) const;
  // Whether `next` continues `r`: a device read of the same file into the same buffer, whose bytes
  // follow r's in both, on the same stream.
  bool continues(const mp_read_request& r, const mp_read_request& next) const;
  // Issues the device read `first` together with the reads after it that continue it as one copy
  // (an FP4 expert laid out in file order is one 12.75 MiB copy, not six); returns the index after
  // the run. A refused copy fails every read of the run, naming the first.
  uint32_t copy_run(const mp::VersionedArray<mp_read_request>& batch, uint32_t first, TicketOutcome& outcome,
                    uint32_t& failed, bool& copies, bool (&used)[2]);
  // Reads one request; a failure is recorded in `outcome` as request `index`.
  void read_one(const mp_read_request& r, uint32_t index, TicketOutcome& outcome, uint32_t& failed, bool& copies,
                bool (&used)[2]);
  // mutex_ held: the ticket's event reported `event_status`; a failure becomes the ticket's.
  void copies_failed(Ticket& t, mp_status event_status);
  // mutex_ held, the ticket's copies done: fills `result`, retires the ticket, throws its error.
  mp_status report(mp_ticket ticket, Ticket& t, mp_ticket_result* result);
  uint64_t now_ns() const { return mp::host_now_ns(host_); }

  const mp_host_api* host_;
  const mp_device_service* dev_;
  bool events_ = false;                        // streams and events exist (ticket_event works)
  bool device_copies_ = false;                 // a GPU: device destinations are copies from the mapping
  bool prefetch_lane_ = true;                  // option prefetch_lane: own (true) or shared
  mp_stream streams_[2] = {nullptr, nullptr};  // [0] demand, [1] prefetch
  mp_event join_ = nullptr;                    // the prefetch lane recorded for the demand lane to wait on
  std::unique_ptr<MappedFiles> files_;
  std::mutex mutex_;  // tickets, and issuing a ticket's copies with its event as one step
  TicketSlots<Ticket> tickets_{"mapped"};
  mp::TransportCounters counters_;
};

}  // namespace moepage::transport
