// The io-uring transport: reads of checkpoint ranges through one io_uring per instance, with no
// threads of its own.
//
// Why one ring per instance and no reader threads: io_uring already queues and runs the reads in
// the kernel, so threads would only add hand-offs. The calls the host makes drive the ring
// instead: submit() queues a batch and hands every read that can start to the kernel with one
// io_uring_submit; wait(), poll() and ticket_event() reap completions. One thread at a time
// reaps (the "driver"; others wait for it to finish its round), and it blocks for completions
// outside the lock, so other threads keep submitting meanwhile (io_uring allows one submitting
// and one completing thread at once). Per-thread rings would need every completion to be reaped
// by the thread that submitted it, and a pager's prefetches are submitted on one thread and
// waited for on another.
//
// Reads: a request is cut into windows of at most buffer_size bytes (aligned_windows.hpp). Files
// opened with O_DIRECT (uring_files.hpp) are read in whole aligned blocks into 4 KiB-aligned
// staging buffers, registered with the ring (read_fixed) when the kernel takes them, and the
// requested bytes are copied from inside the window: memcpy for host destinations, an async copy
// on the transport's copy stream for device ones, after which the buffer stays busy until the
// copy's event completed. Host destinations of buffered files, and aligned host ranges of direct
// ones, are read straight into the destination.
//
// Completions (read_progress.hpp): short reads are sent again for the rest of the window, EINTR
// and EAGAIN are retried, an O_DIRECT read the file system refuses falls back to buffered reads
// under direct: auto. A failed request's ticket reports its index and tag (wait/poll results).
//
// Tickets: (generation << 32 | slot + 1). wait() and a poll() that reports completion retire
// them; a second waiter on a ticket is refused; ticket_event() returns an event recorded on the
// copy stream once every copy of the ticket was issued.
#pragma once
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "aligned_windows.hpp"
#include "chunk_fifo.hpp"
#include "moepage/cpp/plugin_adapter.hpp"
#include "moepage/cpp/transport_counters.hpp"
#include "read_progress.hpp"
#include "staging_pool.hpp"
#include "uring_config.hpp"
#include "uring_files.hpp"
#include "uring_ring.hpp"

namespace moepage::uring {

class UringTransport {
 public:
  UringTransport(const mp_host_api* host, const mp::Options& options);
  UringTransport(const mp_host_api* host, const UringConfig& config);
  ~UringTransport();
  MP_TRANSPORT_MEMBERS(UringTransport);
  mp_status ticket_event(mp_ticket ticket, mp_event* out);

  // For tests, not part of the ABI: every completion's result passes through `filter` before it
  // is acted on, so tests can turn reads into errors, short reads, EINTR or EAGAIN.
  struct Completion {
    const std::string& path;
    uint64_t offset, length;  // the read as it was issued
    bool direct;              // through the O_DIRECT descriptor
    int32_t res;              // what the kernel answered
  };
  using CompletionFilter = std::function<int32_t(const Completion&)>;
  void set_completion_filter(CompletionFilter filter);
  uint64_t ring_submits() const;       // io_uring_submit calls so far
  bool buffers_registered() const;     // the staging buffers are read with read_fixed
  bool file_is_direct(uint32_t file);  // the file's reads use O_DIRECT now

 private:
  struct Ticket;
  struct Chunk {
    Ticket* ticket = nullptr;
    uint32_t request = 0;
    uint64_t tag = 0;
    UringFile* file = nullptr;
    Window window;
    unsigned char* dst = nullptr;  // where the window's first requested byte goes
    bool to_device = false;
    bool straight = false;  // read into dst itself, no staging
    int32_t staging = -1;   // the staging buffer it holds
    ReadProgress progress;
    bool read_direct = false;  // its read in flight went through the O_DIRECT descriptor
    bool copy_issued = false;  // its device copy runs: it no longer counts in Ticket::unissued
    uint64_t issued_offset = 0, issued_length = 0, issued_ns = 0;
  };
  struct Ticket {
    uint32_t generation = 1;
    bool in_use = false;
    bool claimed = false;  // a wait() or poll() is reporting it
    uint32_t n_requests = 0;
    std::vector<Chunk> chunks;  // capacity reused across the slot's tickets; never resized while in use
    uint64_t chunks_left = 0;   // not complete: read and, for device chunks, copied
    uint64_t unissued = 0;      // not yet read and handed on (memcpy done, device copy issued, or failed)
    mp_status status = MP_OK;
    std::string error;
    uint32_t failed_request = MP_NO_REQUEST;
    uint64_t failed_tag = 0;
    std::vector<uint8_t> request_failed;
    mp_event event = nullptr;  // made by ticket_event(), destroyed at retirement
  };
  enum class BufferState : uint8_t { kFree, kReading, kLanded, kCopying };
  struct Buffer {
    BufferState state = BufferState::kFree;
    Chunk* chunk = nullptr;   // whose bytes it holds (kReading on)
    uint64_t copy_order = 0;  // when its device copy was issued, to finish the oldest first
  };

  // Everything below runs with mutex_ held; drive() may release it while it blocks or copies.
  void check_batch(const mp::VersionedArray<mp_read_request>& batch);
  Ticket& acquire_slot(mp_ticket* ticket);
  Ticket& find(mp_ticket ticket, const char* op);
  bool still_live(mp_ticket ticket, const Ticket& t) const;
  void plan(Ticket& t, const mp::VersionedArray<mp_read_request>& batch);
  // Hands every read that can start to the kernel: retries, then demand, then prefetch reads.
  void issue();
  bool start(Chunk* c);
  void flush_submissions();
  // One round of the driver: completions, host copies, finished device copies, new reads; then,
  // when nothing moved and `may_block`, blocks for the next thing `mine` (may be null) needs.
  void drive(std::unique_lock<std::mutex>& lock, Ticket* mine, bool may_block);
  // Runs drive() as the only driver, or waits for the current one to finish its round.
  void drive_or_wait(std::unique_lock<std::mutex>& lock, Ticket* mine, bool may_block);
  void on_completion(Chunk* c, int32_t res);
  void copy_landed(std::unique_lock<std::mutex>& lock);
  void issue_device_copy(Chunk* c);
  bool reap_copies();
  void sync_copy(std::unique_lock<std::mutex>& lock, uint32_t buffer);
  std::optional<uint32_t> copying_buffer(const Ticket* of) const;
  void fail(Chunk* c, mp_status status, std::string message);
  void complete(Chunk* c);
  void release_buffer(Chunk* c);
  std::string describe_failure(const Chunk& c, const char* what) const;
  mp_status report(mp_ticket ticket, Ticket& t, mp_ticket_result* result);
  uint64_t now_ns() const;

  const mp_host_api* host_;
  const mp_device_service* dev_;
  const UringConfig config_;
  mp::HostLog log_;
  UringFiles files_;
  StagingPool pool_;
  Ring ring_;  // after pool_: the ring (and its registration of the buffers) goes first
  mp_stream copy_stream_ = nullptr;
  bool device_copies_ = false;
  CompletionFilter filter_;

  mutable std::mutex mutex_;
  std::condition_variable driver_done_;
  bool driving_ = false;
  std::vector<std::unique_ptr<Ticket>> tickets_;
  std::vector<uint32_t> free_tickets_;
  Fifo<Chunk*> retry_, demand_, prefetch_;
  std::vector<Buffer> buffers_;
  std::vector<uint32_t> free_buffers_;
  std::vector<Chunk*> landed_;  // host chunks the driver copies out of staging (reused)
  uint32_t in_flight_ = 0;      // reads the kernel took
  uint32_t prepared_ = 0;       // reads in the submission queue the kernel has not taken yet
  bool starved_ = false;        // the last issue() stopped for want of a free staging buffer
  uint64_t copy_order_ = 0;

  mp::TransportCounters counters_;
};

}  // namespace moepage::uring
