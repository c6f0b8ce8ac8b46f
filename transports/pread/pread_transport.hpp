// The pread transport: positional reads of file ranges, split into chunks and spread over a small
// pool of reader threads. Host destinations are written directly; device destinations are read
// into a per-thread pinned bounce buffer and copied with the host's device service.
//
// Tickets live in reusable slots: a ticket is (generation << 32 | slot + 1), so a stale ticket
// from a reused slot is recognised. wait() and a poll() that reports completion retire the
// ticket; asking about it again is an error, and so is a second wait while one is blocked on it
// (the first claims it). A failed ticket reports its first failed request's index and tag.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "file_table.hpp"
#include "moepage/cpp/host_clock.hpp"
#include "moepage/cpp/plugin_adapter.hpp"
#include "moepage/cpp/transport_counters.hpp"
#include "ticket_outcome.hpp"
#include "work_queue.hpp"

namespace moepage::pread {

class PreadTransport {
 public:
  PreadTransport(const mp_host_api* host, const mp::Options& options);
  ~PreadTransport();
  MP_TRANSPORT_MEMBERS(PreadTransport);

 private:
  struct TicketState {
    uint32_t generation = 1;
    bool in_use = false;
    bool claimed = false;  // a wait() is blocked on it (guarded by slots_mutex_)
    std::atomic<uint64_t> chunks_left{0};
    uint32_t n_requests = 0;
    std::mutex mutex;  // guards the fields below
    std::condition_variable finished;
    bool done = false;
    transport::TicketOutcome outcome;
    std::vector<uint8_t> request_failed;  // capacity reused across the slot's tickets
  };

  // One chunk of one request.
  struct Job {
    TicketState* ticket = nullptr;
    const transport::OpenFile* file = nullptr;
    uint32_t request = 0;
    uint64_t offset = 0;
    uint64_t length = 0;
    unsigned char* dst = nullptr;  // already advanced to this chunk
    bool to_device = false;
    uint64_t tag = 0;
  };

  // What each reader thread keeps for device destinations; made on its first device chunk.
  struct Bounce {
    void* buffer = nullptr;
    mp_stream stream = nullptr;
  };

  void run(Job& job, uint32_t worker);
  mp_status read_to_device(Job& job, uint32_t worker, std::string& error);
  void finish_chunk(const Job& job, mp_status status, std::string&& error);
  // Checks the batch and resolves each request's file into resolved_ (slots_mutex_ held).
  void check_batch(const mp::VersionedArray<mp_read_request>& requests);
  TicketState& acquire_slot(mp_ticket* ticket);
  // The live, unclaimed state of `ticket` (slots_mutex_ held); throws MP_ERR_INVALID_ARG otherwise.
  TicketState& find(mp_ticket ticket, const char* op);
  void retire(mp_ticket ticket);
  // The finished ticket's outcome: fills `result`, retires the ticket, throws its error.
  mp_status report(mp_ticket ticket, TicketState& state, mp_ticket_result* result);
  uint64_t now_ns() const { return mp::host_now_ns(host_); }

  const mp_host_api* host_;
  uint64_t chunk_bytes_;

  transport::FileTable files_{"pread"};

  std::mutex slots_mutex_;
  std::vector<std::unique_ptr<TicketState>> slots_;
  std::vector<uint32_t> free_slots_;
  // submit()'s scratch, reused under slots_mutex_ so a steady workload stops allocating.
  std::vector<const transport::OpenFile*> resolved_;
  std::vector<Job> staging_;

  std::vector<Bounce> bounce_;  // [worker], each touched only by its worker

  mp::TransportCounters counters_;

  std::unique_ptr<WorkQueue<Job>> queue_;  // last: its threads stop before anything above goes
};

}  // namespace moepage::pread
