// The `odirect` transport: reads expert bytes with O_DIRECT, bypassing the page cache.
//
// Why: when experts are paged, each expert's bytes already live in the pager's slot pool; a
// buffered read would keep a second copy in the page cache, taking memory the slot pool could
// use, and evicting it later costs CPU. Direct reads stream cold NVMe at device speed with one
// copy out of a small aligned bounce buffer per reader thread, and benchmarks measure the disk
// rather than a warm cache.
//
// Threads: `threads` workers take whole requests from one FIFO (demand requests before
// prefetch). Tickets: a map from ticket number to shared state; wait() and a poll() that reports
// completion take the ticket out of the map, so a second waiter finds it gone. A failed ticket
// names the request whose error it reports (index and tag).
//
// Bounce buffers are pinned memory from the host when it offers alloc_pinned (device
// destinations are copied out of them, and an async copy must come from pinned memory), and
// posix_memalign'd otherwise; either way aligned for O_DIRECT.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "moepage/cpp/host_clock.hpp"
#include "moepage/cpp/plugin_adapter.hpp"
#include "moepage/cpp/transport_counters.hpp"

namespace odirect {

class OdirectTransport {
 public:
  OdirectTransport(const mp_host_api* host, const mp::Options& options);
  ~OdirectTransport();
  MP_TRANSPORT_MEMBERS(OdirectTransport);

 private:
  struct File {
    std::string path;
    int direct_fd = -1;    // -1 when the filesystem refused O_DIRECT
    int buffered_fd = -1;  // opened only when falling back is allowed
    std::atomic<bool> direct_refused{false};
  };
  struct Ticket {
    std::mutex mutex;
    std::condition_variable finished;
    uint32_t left = 0;
    mp_status status = MP_OK;
    std::string error;
    uint32_t failed_request = MP_NO_REQUEST;
    uint64_t failed_tag = 0;
    uint32_t failed_count = 0;
  };
  struct Job {
    std::shared_ptr<Ticket> ticket;
    File* file = nullptr;
    mp_read_request request{};
    uint32_t index = 0;  // in the submitted array
  };
  struct Worker {
    unsigned char* bounce = nullptr;  // aligned to `alignment`, inside `block`
    void* block = nullptr;            // what was allocated
    bool bounce_pinned = false;       // block came from the host's alloc_pinned
    mp_stream stream = nullptr;
    std::thread thread;
  };

  void work(Worker& worker);
  mp_status run(Worker& worker, const Job& job, std::string& error);
  void finish(const Job& job, mp_status status, std::string&& error);
  void allocate_bounce(Worker& worker);
  void free_bounce(Worker& worker) noexcept;
  std::shared_ptr<Ticket> take(mp_ticket ticket, bool only_if_done, bool* pending);
  // The ticket's outcome into `result`; throws its error.
  static mp_status report(Ticket& ticket, mp_ticket_result* result);
  bool device_copies() const;
  uint64_t now_ns() const { return mp::host_now_ns(host_); }

  const mp_host_api* host_;
  mp::HostLog log_;
  uint64_t alignment_;
  uint64_t buffer_bytes_;
  bool fallback_buffered_;

  std::mutex files_mutex_;
  std::deque<File> files_;  // deque: open() never moves a File a queued job points to

  std::mutex tickets_mutex_;
  std::map<mp_ticket, std::shared_ptr<Ticket>> tickets_;
  mp_ticket next_ticket_ = 1;

  std::mutex queue_mutex_;
  std::condition_variable queue_ready_;
  std::deque<Job> demand_, prefetch_;
  bool stopping_ = false;

  mp::TransportCounters counters_;

  std::vector<Worker> workers_;  // last: threads start after everything they use exists
};

}  // namespace odirect
