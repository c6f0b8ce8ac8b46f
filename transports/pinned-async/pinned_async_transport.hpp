// The pinned-async transport: reader threads read file ranges into a ring of pinned staging
// buffers (host->device->alloc_pinned; on the CPU device ordinary host memory stands in), then
// copy each buffer to its destination: device destinations with copy_to_device_async on the
// transport's own copy stream followed by an event, host destinations with memcpy.
//
// Staging reuse: every reader thread owns `ring` buffers of staging / ring bytes. A buffer whose
// device copy was issued stays busy until its event completed; the thread synchronizes that
// event before it reads into the buffer again, and only then counts the chunk done. A thread
// with nothing to read finishes all its copies before it sleeps, so a ticket never waits on an
// idle thread.
//
// Scheduling: requests are split into chunks of at most one staging buffer. Demand chunks are
// served before every prefetch chunk. A submit() of prefetch reads blocks while queue_depth
// chunks are queued; a demand submit never blocks (it must not wait behind speculation).
//
// Tickets: (generation << 32 | slot + 1); wait() and a completing poll() retire them, a second
// wait on a ticket another thread waits for is refused, and a failed ticket names its first
// failed request (index and tag).
// ticket_event() returns an event recorded on the copy stream once every chunk of the ticket is
// read and its copy issued, so the compute stream can wait on the copies without the host.
#pragma once
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "file_table.hpp"
#include "moepage/cpp/host_clock.hpp"
#include "moepage/cpp/plugin_adapter.hpp"
#include "moepage/cpp/transport_counters.hpp"
#include "ticket_outcome.hpp"
#include "ticket_slots.hpp"

namespace moepage::transport {

class PinnedAsyncTransport {
 public:
  PinnedAsyncTransport(const mp_host_api* host, const mp::Options& options);
  ~PinnedAsyncTransport();
  MP_TRANSPORT_MEMBERS(PinnedAsyncTransport);
  mp_status ticket_event(mp_ticket ticket, mp_event* out);

 private:
  struct Ticket : TicketSlot {
    uint64_t chunks_left = 0;  // not yet complete (read and, for device chunks, copied)
    uint64_t unissued = 0;     // not yet read and handed to the copy stream (or memcpy'd)
    uint32_t n_requests = 0;
    TicketOutcome outcome;
    uint32_t failed_chunks = 0;
    mp_event event = nullptr;  // made by ticket_event(), destroyed at retirement
  };
  // Which request of which ticket a chunk belongs to.
  struct Origin {
    uint32_t ticket = 0;  // slot index
    uint32_t request = 0;
    uint64_t tag = 0;
  };
  struct Job {
    Origin origin;
    const OpenFile* file = nullptr;
    uint64_t offset = 0, length = 0;
    unsigned char* dst = nullptr;
    bool to_device = false;
  };
  struct Staging {
    void* buffer = nullptr;
    mp_event event = nullptr;  // recorded after this buffer's copy
    bool busy = false;         // a device copy from this buffer may still run
    Origin origin;             // whose chunk the busy copy belongs to
  };

  void work(uint32_t worker);
  void run(Job& job, uint32_t worker);
  // Waits for the staging buffer's copy and completes its chunk.
  void release(Staging& s);
  void finish_chunk(const Origin& origin, bool issued_now, mp_status status, const std::string& error);
  // Checks the batch before anything is queued; returns the chunks it makes.
  uint64_t check_batch(const mp::VersionedArray<mp_read_request>& requests, bool& all_prefetch) const;
  // mutex_ held, the ticket done: fills `result`, retires the ticket, throws its error.
  mp_status report(mp_ticket ticket, Ticket& t, mp_ticket_result* result);
  void retire(mp_ticket ticket);  // mutex_ held
  uint64_t now_ns() const { return mp::host_now_ns(host_); }

  const mp_host_api* host_;
  const mp_device_service* dev_;
  uint32_t threads_, ring_, queue_depth_;
  uint64_t chunk_bytes_;
  FileTable files_{"pinned-async"};
  mp_stream copy_stream_ = nullptr;
  std::mutex copy_mutex_;  // one copy stream shared by the readers: issue + record is one step

  std::mutex mutex_;  // tickets and queues
  std::condition_variable work_ready_, ticket_changed_, queue_room_;
  TicketSlots<Ticket> tickets_{"pinned-async"};
  std::deque<Job> demand_, prefetch_;
  bool stopping_ = false;

  std::vector<std::vector<Staging>> staging_;  // [worker][ring]
  std::vector<uint32_t> next_staging_;         // [worker]

  mp::TransportCounters counters_;
  std::vector<std::thread> workers_;  // last: started after everything they use exists
};

}  // namespace moepage::transport
