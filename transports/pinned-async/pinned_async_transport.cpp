#include "pinned_async_transport.hpp"

#include <algorithm>
#include <cstring>

#include "fileio/positional_read.hpp"
#include "request_checks.hpp"

namespace moepage::transport {

namespace {

constexpr int64_t kMaxThreads = 64;
constexpr int64_t kMaxRing = 64;
constexpr uint64_t kMinChunk = 4096;

[[noreturn]] void bad_option(const std::string& message) {
  throw mp::Error(MP_ERR_INVALID_ARG, "pinned-async: " + message);
}

}  // namespace

PinnedAsyncTransport::PinnedAsyncTransport(const mp_host_api* host, const mp::Options& options)
    : host_(host), dev_(host != nullptr && MP_HAS_FIELD(host, mp_host_api, device) ? host->device : nullptr) {
  const int64_t threads = options.get_int("threads");
  if (threads < 1 || threads > kMaxThreads)
    bad_option(mp::format("option threads = {}: expected 1 to {}", threads, kMaxThreads));
  const int64_t ring = options.get_int("ring");
  if (ring < 1 || ring > kMaxRing) bad_option(mp::format("option ring = {}: expected 1 to {} buffers", ring, kMaxRing));
  const int64_t depth = options.get_int("queue_depth");
  if (depth < 1) bad_option(mp::format("option queue_depth = {}: expected at least 1", depth));
  const uint64_t staging = options.get_size("staging");
  threads_ = uint32_t(threads);
  ring_ = uint32_t(ring);
  queue_depth_ = uint32_t(depth);
  chunk_bytes_ = staging / ring_;
  if (chunk_bytes_ < kMinChunk)
    bad_option(mp::format("option staging = {} bytes over {} ring buffers gives buffers under {} bytes", staging, ring_,
                          kMinChunk));
  if (dev_ == nullptr || dev_->alloc_pinned == nullptr || dev_->free_pinned == nullptr)
    throw mp::Error(MP_ERR_UNSUPPORTED, "pinned-async: the host offers no pinned memory");

  // Streams and events are needed only for device destinations; a host without them still
  // serves host destinations (submit refuses device ones with a clear message).
  if (dev_->stream_create != nullptr && dev_->stream_create(dev_->ctx, &copy_stream_) != MP_OK) copy_stream_ = nullptr;
  staging_.resize(threads_);
  next_staging_.assign(threads_, 0);
  auto cleanup = [this] {
    for (auto& ring_buffers : staging_)
      for (Staging& s : ring_buffers) {
        if (s.buffer != nullptr) dev_->free_pinned(dev_->ctx, s.buffer);
        if (s.event != nullptr) dev_->event_destroy(dev_->ctx, s.event);
      }
    if (copy_stream_ != nullptr && dev_->stream_destroy != nullptr) dev_->stream_destroy(dev_->ctx, copy_stream_);
  };
  for (auto& ring_buffers : staging_) {
    ring_buffers.resize(ring_);
    for (Staging& s : ring_buffers) {
      if (dev_->alloc_pinned(dev_->ctx, chunk_bytes_, &s.buffer) != MP_OK || s.buffer == nullptr) {
        s.buffer = nullptr;
        cleanup();
        throw mp::Error(MP_ERR_OOM,
                        mp::format("pinned-async: cannot allocate {} bytes of pinned staging", chunk_bytes_));
      }
      if (dev_->event_create != nullptr && dev_->event_destroy != nullptr &&
          dev_->event_create(dev_->ctx, &s.event) != MP_OK)
        s.event = nullptr;
    }
  }
  for (uint32_t i = 0; i < threads_; ++i) workers_.emplace_back([this, i] { work(i); });
}

PinnedAsyncTransport::~PinnedAsyncTransport() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    demand_.clear();
    prefetch_.clear();
  }
  work_ready_.notify_all();
  queue_room_.notify_all();
  for (auto& w : workers_) w.join();
  for (auto& ring_buffers : staging_)
    for (Staging& s : ring_buffers) {
      if (s.busy && s.event != nullptr) dev_->event_synchronize(dev_->ctx, s.event);
      if (s.event != nullptr) dev_->event_destroy(dev_->ctx, s.event);
      dev_->free_pinned(dev_->ctx, s.buffer);
    }
  tickets_.for_each([this](Ticket& t) {
    if (t.event != nullptr) dev_->event_destroy(dev_->ctx, t.event);
  });
  if (copy_stream_ != nullptr && dev_->stream_destroy != nullptr) dev_->stream_destroy(dev_->ctx, copy_stream_);
}

mp_status PinnedAsyncTransport::open(const char* path, uint32_t* file) {
  if (file == nullptr) throw mp::Error(MP_ERR_INVALID_ARG, "pinned-async: open: file is NULL");
  *file = files_.open(path);
  return MP_OK;
}

uint64_t PinnedAsyncTransport::check_batch(const mp::VersionedArray<mp_read_request>& requests,
                                           bool& all_prefetch) const {
  const bool device_copies = copy_stream_ != nullptr && dev_->copy_to_device_async != nullptr &&
                             dev_->event_record != nullptr && dev_->event_synchronize != nullptr &&
                             staging_[0][0].event != nullptr;
  uint64_t chunks = 0;
  all_prefetch = requests.size() > 0;
  for (uint32_t i = 0; i < requests.size(); ++i) {
    const mp_read_request r = requests[i];
    check_read_request(r, i, {"pinned-async", files_.find(r.file) != nullptr, files_.size(), device_copies});
    if (r.priority == MP_READ_DEMAND) all_prefetch = false;
    chunks += (r.length + chunk_bytes_ - 1) / chunk_bytes_;
  }
  return chunks;
}

mp_status PinnedAsyncTransport::submit(const mp_read_request* requests, uint32_t n, mp_ticket* ticket) {
  if (ticket == nullptr) throw mp::Error(MP_ERR_INVALID_ARG, "pinned-async: submit: ticket is NULL");
  const mp::VersionedArray<mp_read_request> batch(requests, n, "pinned-async: submit");
  bool all_prefetch = false;
  const uint64_t chunks = check_batch(batch, all_prefetch);

  std::unique_lock lock(mutex_);
  if (all_prefetch)
    queue_room_.wait(lock, [this] { return stopping_ || demand_.size() + prefetch_.size() < queue_depth_; });
  if (stopping_) throw mp::Error(MP_ERR_INTERNAL, "pinned-async: submit during shutdown");
  const uint32_t slot = tickets_.take();
  Ticket& t = tickets_[slot];
  t.chunks_left = chunks;
  t.unissued = chunks;
  t.n_requests = n;
  t.outcome.reset();
  t.failed_chunks = 0;
  if (chunks == 0) counters_.requests += n;
  for (uint32_t i = 0; i < n; ++i) {
    const mp_read_request r = batch[i];
    auto& queue = r.priority == MP_READ_DEMAND ? demand_ : prefetch_;
    for (uint64_t done = 0; done < r.length; done += chunk_bytes_) {
      queue.push_back(Job{Origin{slot, i, r.tag}, files_.find(r.file), r.offset + done,
                          std::min(chunk_bytes_, r.length - done),
                          static_cast<unsigned char*>(r.dst) + r.dst_offset + done, r.dst_kind == MP_MEM_DEVICE});
    }
  }
  *ticket = tickets_.handle(slot);
  lock.unlock();
  work_ready_.notify_all();
  return MP_OK;
}

void PinnedAsyncTransport::work(uint32_t worker) {
  for (;;) {
    Job job;
    {
      std::unique_lock lock(mutex_);
      for (;;) {
        if (stopping_) break;
        if (!demand_.empty() || !prefetch_.empty()) break;
        // Nothing to read: finish this thread's copies before sleeping, so no ticket waits on it.
        bool any_busy = false;
        for (const Staging& s : staging_[worker]) any_busy = any_busy || s.busy;
        if (any_busy) {
          lock.unlock();
          for (Staging& s : staging_[worker])
            if (s.busy) release(s);
          lock.lock();
          continue;
        }
        work_ready_.wait(lock);
      }
      if (stopping_) return;  // the destructor synchronizes what is still busy
      auto& queue = !demand_.empty() ? demand_ : prefetch_;
      job = queue.front();
      queue.pop_front();
    }
    queue_room_.notify_one();
    run(job, worker);
  }
}

void PinnedAsyncTransport::run(Job& job, uint32_t worker) {
  Staging& s = staging_[worker][next_staging_[worker]];
  next_staging_[worker] = (next_staging_[worker] + 1) % ring_;
  if (s.busy) release(s);  // never read into a buffer whose copy may still be running
  const uint64_t t0 = now_ns();
  const fileio::RangeRead r =
      fileio::read_range("pinned-async", job.file->fd, job.file->path, job.offset, job.length, s.buffer);
  const uint64_t t1 = now_ns();
  {
    std::lock_guard lock(mutex_);
    counters_.read_ns += t1 - t0;
    counters_.bytes_read += r.bytes_read;
  }
  if (r.status != MP_OK) {
    finish_chunk(job.origin, true, r.status, r.message);
    return;
  }
  if (!job.to_device) {
    std::memcpy(job.dst, s.buffer, job.length);
    const uint64_t t2 = now_ns();
    {
      std::lock_guard lock(mutex_);
      counters_.copy_ns += t2 - t1;
    }
    finish_chunk(job.origin, true, MP_OK, {});
    return;
  }
  mp_status st;
  {
    std::lock_guard copy_lock(copy_mutex_);
    st = dev_->copy_to_device_async(dev_->ctx, job.dst, s.buffer, job.length, copy_stream_);
    if (st == MP_OK) st = dev_->event_record(dev_->ctx, s.event, copy_stream_);
  }
  const uint64_t t2 = now_ns();
  if (st != MP_OK) {
    finish_chunk(job.origin, true, MP_ERR_DEVICE,
                 mp::format("pinned-async: {}: copying {} bytes read at offset {} to the device failed ({})",
                            job.file->path, job.length, job.offset, mp_status_name(st)));
    return;
  }
  s.busy = true;
  s.origin = job.origin;
  std::lock_guard lock(mutex_);
  counters_.copy_ns += t2 - t1;
  --tickets_[job.origin.ticket].unissued;
  ticket_changed_.notify_all();
}

void PinnedAsyncTransport::release(Staging& s) {
  const mp_status st = dev_->event_synchronize(dev_->ctx, s.event);
  s.busy = false;
  finish_chunk(s.origin, false, st == MP_OK ? MP_OK : MP_ERR_DEVICE,
               st == MP_OK ? std::string() : mp::format("pinned-async: a device copy failed ({})", mp_status_name(st)));
}

void PinnedAsyncTransport::finish_chunk(const Origin& origin, bool issued_now, mp_status status,
                                        const std::string& error) {
  std::lock_guard lock(mutex_);
  Ticket& t = tickets_[origin.ticket];
  if (issued_now) --t.unissued;
  if (status != MP_OK) {
    ++counters_.errors;
    ++t.failed_chunks;
    t.outcome.record_failure(status, error, origin.request, origin.tag);
  }
  if (--t.chunks_left == 0) counters_.requests += t.n_requests;
  ticket_changed_.notify_all();
}

void PinnedAsyncTransport::retire(mp_ticket ticket) {
  Ticket& t = tickets_[uint32_t(ticket & 0xffffffffu) - 1];
  if (t.event != nullptr) {
    dev_->event_destroy(dev_->ctx, t.event);
    t.event = nullptr;
  }
  tickets_.retire(ticket);
}

mp_status PinnedAsyncTransport::report(mp_ticket ticket, Ticket& t, mp_ticket_result* result) {
  const mp_status status = t.outcome.status;
  const std::string error = std::move(t.outcome.error);
  t.outcome.describe(*result);
  // Chunks, not requests, are what failed here; a failed ticket names at least one request.
  result->failed_count = t.failed_chunks > t.n_requests ? t.n_requests : t.failed_chunks;
  retire(ticket);
  if (status != MP_OK) throw mp::Error(status, error);
  return MP_OK;
}

mp_status PinnedAsyncTransport::wait(mp_ticket ticket, mp_ticket_result* result) {
  std::unique_lock lock(mutex_);
  Ticket& t = tickets_.find(ticket, "wait");
  t.claimed = true;  // a second waiter is refused instead of retiring the slot twice
  const uint64_t t0 = now_ns();
  ticket_changed_.wait(lock, [&t] { return t.chunks_left == 0; });
  counters_.wait_ns += now_ns() - t0;
  return report(ticket, t, result);
}

mp_status PinnedAsyncTransport::poll(mp_ticket ticket, mp_ticket_result* result) {
  std::unique_lock lock(mutex_);
  Ticket& t = tickets_.find(ticket, "poll");
  if (t.chunks_left != 0) return MP_PENDING;
  return report(ticket, t, result);
}

mp_status PinnedAsyncTransport::ticket_event(mp_ticket ticket, mp_event* out) {
  if (out == nullptr) throw mp::Error(MP_ERR_INVALID_ARG, "pinned-async: ticket_event: out is NULL");
  if (copy_stream_ == nullptr || dev_->event_create == nullptr || dev_->event_record == nullptr)
    throw mp::Error(MP_ERR_UNSUPPORTED, "pinned-async: ticket_event: the host offers no copy stream and events");
  std::unique_lock lock(mutex_);
  Ticket& t = tickets_.find(ticket, "ticket_event");
  ticket_changed_.wait(lock, [&t] { return t.unissued == 0; });
  if (t.event == nullptr && dev_->event_create(dev_->ctx, &t.event) != MP_OK) {
    t.event = nullptr;
    throw mp::Error(MP_ERR_DEVICE, "pinned-async: ticket_event: cannot create an event");
  }
  // Recorded after every copy issued so far on the one copy stream, the ticket's included.
  std::lock_guard copy_lock(copy_mutex_);
  if (dev_->event_record(dev_->ctx, t.event, copy_stream_) != MP_OK)
    throw mp::Error(MP_ERR_DEVICE, "pinned-async: ticket_event: cannot record the event");
  *out = t.event;
  return MP_OK;
}

mp_status PinnedAsyncTransport::stats(mp_transport_stats* out) { return counters_.write(out, "pinned-async: stats"); }

}  // namespace moepage::transport
