// The io-uring transport's driver: starting reads, reaping completions, copying landed bytes
// out of staging and finishing device copies (the design is in uring_transport.hpp). Every
// function here runs with mutex_ held; drive() lets go of it only while it blocks or copies.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include "uring_transport.hpp"

namespace moepage::uring {

void UringTransport::issue() {
  starved_ = false;
  // Retries hold their staging buffer already; demand reads go before every prefetch read, and a
  // demand read waiting for a buffer keeps prefetch reads from taking the next free one.
  bool blocked = false;
  for (Fifo<Chunk*>* queue : {&retry_, &demand_, &prefetch_}) {
    while (!blocked && !queue->empty()) {
      if (!start(queue->front())) {
        blocked = true;
        break;
      }
      queue->pop();
    }
  }
  if (prepared_ > 0) flush_submissions();
}

bool UringTransport::start(Chunk* c) {
  if (in_flight_ + prepared_ >= config_.queue_depth) return false;
  bool took_buffer = false;
  if (!c->straight && c->staging < 0) {
    if (free_buffers_.empty()) {
      starved_ = true;
      return false;
    }
    c->staging = int32_t(free_buffers_.back());
    free_buffers_.pop_back();
    buffers_[uint32_t(c->staging)] = Buffer{BufferState::kReading, c, 0};
    took_buffer = true;
  }
  io_uring_sqe* sqe = ring_.next_sqe();
  if (sqe == nullptr) {  // the kernel has not taken earlier entries yet
    if (took_buffer) release_buffer(c);
    return false;
  }
  const UringFile& f = *c->file;
  const uint64_t landed = c->progress.landed;
  c->read_direct = f.direct;
  c->progress.granule = f.direct ? f.granule : 1;  // a buffered read may stop anywhere and go on
  c->issued_offset = c->window.read_offset + landed;
  c->issued_length = c->window.read_length - landed;
  c->issued_ns = now_ns();
  const auto length = uint32_t(c->issued_length);  // at most buffer_size (64 MiB)
  if (c->straight) {
    ring_.prep_read(sqe, f.fd, c->dst + landed, length, c->issued_offset, c);
  } else {
    unsigned char* into = pool_.data(uint32_t(c->staging)) + landed;
    if (ring_.buffers_registered()) {
      ring_.prep_read_fixed(sqe, f.fd, into, length, c->issued_offset, c->staging, c);
    } else {
      ring_.prep_read(sqe, f.fd, into, length, c->issued_offset, c);
    }
  }
  ++prepared_;
  return true;
}

void UringTransport::flush_submissions() {
  // One io_uring_submit for everything prepared. EAGAIN/EBUSY (the kernel is short of resources
  // for now) leave the entries queued; the driver submits them again before it sleeps.
  const int taken = ring_.submit();
  if (taken <= 0) return;
  const uint32_t n = std::min(uint32_t(taken), prepared_);
  prepared_ -= n;
  in_flight_ += n;
}

void UringTransport::drive_or_wait(std::unique_lock<std::mutex>& lock, Ticket* mine, bool may_block) {
  if (driving_) {
    if (may_block) driver_done_.wait(lock);
    return;
  }
  driving_ = true;
  try {
    drive(lock, mine, may_block);
  } catch (...) {
    driving_ = false;
    driver_done_.notify_all();
    throw;
  }
  driving_ = false;
  driver_done_.notify_all();
}

void UringTransport::drive(std::unique_lock<std::mutex>& lock, Ticket* mine, bool may_block) {
  const unsigned reaped =
      ring_.drain([this](void* cookie, int32_t res) { on_completion(static_cast<Chunk*>(cookie), res); });
  const bool copied = !landed_.empty();
  if (copied) copy_landed(lock);
  const bool finished = reap_copies();
  issue();
  if (reaped > 0 || copied || finished || !may_block) return;

  // Nothing moved: block for what comes next, preferring what the caller's own ticket needs.
  if (mine != nullptr && mine->unissued == 0 && mine->chunks_left > 0) {
    if (const auto b = copying_buffer(mine)) return sync_copy(lock, *b);
  }
  if (starved_) {
    if (const auto b = copying_buffer(nullptr)) return sync_copy(lock, *b);
  }
  if (in_flight_ > 0) {
    lock.unlock();
    const int r = ring_.wait_for_completion();
    lock.lock();
    if (r < 0)
      throw mp::Error(MP_ERR_IO, mp::format("io-uring: waiting for completions failed: {}", std::strerror(-r)));
    return;
  }
  if (const auto b = copying_buffer(nullptr)) return sync_copy(lock, *b);
  if (prepared_ > 0) {  // the kernel refused the entries for now: let it recover
    lock.unlock();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    lock.lock();
    return;
  }
  throw mp::Error(MP_ERR_INTERNAL, "io-uring: a ticket waits, but no read or copy is in progress");
}

void UringTransport::on_completion(Chunk* c, int32_t res) {
  --in_flight_;
  counters_.read_ns += now_ns() - c->issued_ns;
  if (filter_) res = filter_(Completion{c->file->path, c->issued_offset, c->issued_length, c->read_direct, res});
  const uint64_t before = c->progress.landed;
  const Next next = c->progress.apply(res);
  counters_.bytes_read += c->progress.landed - before;
  switch (next) {
    case Next::kContinue: retry_.push(c); return;
    case Next::kDirectRefused:
      // direct: auto reads the file through the page cache from now on; the window stays aligned.
      if (c->read_direct && files_.fall_back_to_buffered(*c->file, c->progress.error)) {
        retry_.push(c);
        return;
      }
      return fail(c, MP_ERR_IO,
                  describe_failure(*c, "read error") + ": " + std::strerror(c->progress.error) +
                      (c->read_direct ? " (an O_DIRECT read; direct: auto falls back to buffered reads)" : ""));
    case Next::kError:
      return fail(c, MP_ERR_IO, describe_failure(*c, "read error") + ": " + std::strerror(c->progress.error));
    case Next::kEndOfFile: return fail(c, MP_ERR_IO, describe_failure(*c, "unexpected end of file"));
    case Next::kDone: break;
  }
  if (c->straight) return complete(c);
  if (c->to_device) return issue_device_copy(c);
  buffers_[uint32_t(c->staging)].state = BufferState::kLanded;
  landed_.push_back(c);
}

std::string UringTransport::describe_failure(const Chunk& c, const char* what) const {
  const uint64_t landed = c.progress.landed;
  const uint64_t skip = c.window.skip();
  const uint64_t got = landed <= skip ? 0 : std::min(landed - skip, c.window.want_length);
  return mp::format("io-uring: {}: {} at offset {} (wanted {} bytes, got {})", c.file->path, what, c.window.want_offset,
                    c.window.want_length, got);
}

void UringTransport::copy_landed(std::unique_lock<std::mutex>& lock) {
  // The buffers stay kLanded, so nothing else touches them (or their chunks, whose tickets cannot
  // complete) while the lock is free for submitters.
  lock.unlock();
  const uint64_t start = now_ns();
  for (Chunk* c : landed_)
    std::memcpy(c->dst, pool_.data(uint32_t(c->staging)) + c->window.skip(), c->window.want_length);
  const uint64_t took = now_ns() - start;
  lock.lock();
  counters_.copy_ns += took;
  for (Chunk* c : landed_) complete(c);
  landed_.clear();
}

void UringTransport::issue_device_copy(Chunk* c) {
  const uint32_t b = uint32_t(c->staging);
  const uint64_t start = now_ns();
  // The requested bytes are copied from where they sit inside the aligned window: no host memcpy.
  mp_status s = dev_->copy_to_device_async(dev_->ctx, c->dst, pool_.data(b) + c->window.skip(), c->window.want_length,
                                           copy_stream_);
  if (s == MP_OK) s = dev_->event_record(dev_->ctx, pool_.event(b), copy_stream_);
  counters_.copy_ns += now_ns() - start;
  if (s != MP_OK)
    return fail(c, s, describe_failure(*c, "copying to the device failed") + " (" + mp_status_name(s) + ")");
  buffers_[b].state = BufferState::kCopying;
  buffers_[b].copy_order = ++copy_order_;
  c->copy_issued = true;
  --c->ticket->unissued;
}

bool UringTransport::reap_copies() {
  bool any = false;
  for (uint32_t b = 0; b < buffers_.size(); ++b) {
    if (buffers_[b].state != BufferState::kCopying) continue;
    const mp_status s = dev_->event_query(dev_->ctx, pool_.event(b));
    if (s == MP_PENDING) continue;
    Chunk* c = buffers_[b].chunk;
    if (s == MP_OK) {
      complete(c);
    } else {
      fail(c, s, describe_failure(*c, "the device copy failed") + " (" + mp_status_name(s) + ")");
    }
    any = true;
  }
  return any;
}

void UringTransport::sync_copy(std::unique_lock<std::mutex>& lock, uint32_t b) {
  // Only the driver finishes copies, so the buffer stays kCopying while the lock is free.
  lock.unlock();
  const mp_status s = dev_->event_synchronize(dev_->ctx, pool_.event(b));
  lock.lock();
  Chunk* c = buffers_[b].chunk;
  if (s == MP_OK) {
    complete(c);
  } else {
    fail(c, s, describe_failure(*c, "the device copy failed") + " (" + mp_status_name(s) + ")");
  }
}

std::optional<uint32_t> UringTransport::copying_buffer(const Ticket* of) const {
  std::optional<uint32_t> oldest;
  for (uint32_t b = 0; b < buffers_.size(); ++b) {
    const Buffer& buf = buffers_[b];
    if (buf.state != BufferState::kCopying || (of != nullptr && buf.chunk->ticket != of)) continue;
    if (!oldest || buf.copy_order < buffers_[*oldest].copy_order) oldest = b;
  }
  return oldest;
}

void UringTransport::fail(Chunk* c, mp_status status, std::string message) {
  Ticket& t = *c->ticket;
  if (t.status == MP_OK) {  // the first error is the ticket's
    t.status = status;
    t.error = std::move(message);
    if (c->tag != 0) t.error += mp::format(" [tag {}]", c->tag);
    t.failed_request = c->request;
    t.failed_tag = c->tag;
  }
  t.request_failed[c->request] = 1;
  complete(c);
}

void UringTransport::complete(Chunk* c) {
  Ticket& t = *c->ticket;
  if (c->staging >= 0) release_buffer(c);
  if (!c->copy_issued) --t.unissued;
  if (--t.chunks_left > 0) return;
  counters_.requests += t.n_requests;
  counters_.errors += uint64_t(std::count(t.request_failed.begin(), t.request_failed.end(), 1));
}

void UringTransport::release_buffer(Chunk* c) {
  buffers_[uint32_t(c->staging)] = Buffer{};
  free_buffers_.push_back(uint32_t(c->staging));
  c->staging = -1;
}

}  // namespace moepage::uring
