// The io-uring transport's calls: construction, open, submit (checking and planning a batch),
// tickets, wait/poll/ticket_event and stats. The driver (reaping completions, copies, starting
// reads) is uring_driver.cpp.
#include <algorithm>
#include <chrono>
#include <climits>
#include <cstring>
#include <thread>

#include "uring_transport.hpp"

#include "request_checks.hpp"

namespace moepage::uring {

namespace {

bool has_device_copies(const mp_device_service* d) {
  return d != nullptr && MP_HAS_FIELD(d, mp_device_service, copy_to_device_async) && d->stream_create != nullptr &&
         d->stream_destroy != nullptr && d->copy_to_device_async != nullptr && d->event_record != nullptr &&
         d->event_query != nullptr && d->event_synchronize != nullptr;
}

const mp_device_service* device_of(const mp_host_api* host) {
  return host != nullptr && MP_HAS_FIELD(host, mp_host_api, device) ? host->device : nullptr;
}

}  // namespace

UringTransport::UringTransport(const mp_host_api* host, const mp::Options& options)
    : UringTransport(host, UringConfig::from(options)) {}

UringTransport::UringTransport(const mp_host_api* host, const UringConfig& config)
    : host_(host),
      dev_(device_of(host)),
      config_((config.validate(), config)),
      log_(host, "io-uring"),
      files_(config.direct, config.buffer_size, kStagingAlignment, log_),
      pool_(host, config.buffers, config.buffer_size),
      ring_(config.queue_depth, config.sqpoll) {
  if (config_.fixed_buffers != Mode::kOff) {
    const std::vector<iovec> iov = pool_.iovecs();
    const int err = ring_.register_buffers(iov);
    if (err != 0 && config_.fixed_buffers == Mode::kOn)
      throw mp::Error(
          MP_ERR_UNSUPPORTED,
          mp::format("io-uring: fixed_buffers: on, but the kernel refused to register {} staging buffers of "
                     "{} bytes: {} (fixed_buffers: auto reads into them unregistered)",
                     config_.buffers, config_.buffer_size, std::strerror(err)));
    if (err != 0)
      log_.info("the kernel refused to register the {} staging buffers ({}); reading into them unregistered",
                config_.buffers, std::strerror(err));
  }
  if (has_device_copies(dev_) && pool_.pinned() && pool_.event(0) != nullptr &&
      dev_->stream_create(dev_->ctx, &copy_stream_) == MP_OK && copy_stream_ != nullptr)
    device_copies_ = true;
  buffers_.resize(config_.buffers);
  for (uint32_t i = config_.buffers; i-- > 0;) free_buffers_.push_back(i);
  landed_.reserve(config_.buffers);
  log_.debug("ring of {} entries{}, {} staging buffers of {} bytes ({}), direct: {}", config_.queue_depth,
             config_.sqpoll ? " (sqpoll)" : "", config_.buffers, config_.buffer_size,
             ring_.buffers_registered() ? "registered" : "unregistered",
             config_.direct == Mode::kOn    ? "on"
             : config_.direct == Mode::kOff ? "off"
                                            : "auto");
}

UringTransport::~UringTransport() {
  std::unique_lock lock(mutex_);
  retry_.clear();
  demand_.clear();
  prefetch_.clear();
  driver_done_.wait(lock, [this] { return !driving_; });
  // Reads the kernel took (or will take) land in staging buffers or callers' memory: they must
  // finish before either goes away. Nothing new starts: the queues are empty.
  while (in_flight_ + prepared_ > 0) {
    if (prepared_ > 0) flush_submissions();
    if (in_flight_ > 0 && ring_.wait_for_completion() == 0) {
      ring_.drain([this](void*, int32_t) { --in_flight_; });
    } else {  // the kernel is short of resources, or waiting failed: try again shortly
      lock.unlock();
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      lock.lock();
    }
  }
  // Copies out of staging must be done before it is freed.
  for (uint32_t i = 0; i < buffers_.size(); ++i)
    if (buffers_[i].state == BufferState::kCopying) dev_->event_synchronize(dev_->ctx, pool_.event(i));
  for (auto& t : tickets_)
    if (t->event != nullptr) dev_->event_destroy(dev_->ctx, t->event);
  if (copy_stream_ != nullptr) dev_->stream_destroy(dev_->ctx, copy_stream_);
}

uint64_t UringTransport::now_ns() const {
  if (host_ != nullptr && MP_HAS_FIELD(host_, mp_host_api, now_ns) && host_->now_ns != nullptr)
    return host_->now_ns(host_->ctx);
  return uint64_t(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

mp_status UringTransport::open(const char* path, uint32_t* file) {
  if (file == nullptr) throw mp::Error(MP_ERR_INVALID_ARG, "io-uring: open: file is NULL");
  *file = files_.open(path);
  return MP_OK;
}

void UringTransport::check_batch(const mp::VersionedArray<mp_read_request>& batch) {
  constexpr uint64_t kMaxOffset = uint64_t(LLONG_MAX);  // what off_t (and the kernel) can address
  for (uint32_t i = 0; i < batch.size(); ++i) {
    const mp_read_request r = batch[i];
    transport::check_read_request(r, i, {"io-uring", files_.find(r.file) != nullptr, files_.size(), device_copies_});
    if (r.length > 0 && r.offset + r.length > kMaxOffset)
      throw mp::Error(MP_ERR_INVALID_ARG,
                      mp::format("io-uring: request {}: offset {} + length {} is beyond what the system can address", i,
                                 r.offset, r.length));
  }
}

mp_status UringTransport::submit(const mp_read_request* requests, uint32_t n, mp_ticket* ticket) {
  if (ticket == nullptr) throw mp::Error(MP_ERR_INVALID_ARG, "io-uring: submit: ticket is NULL");
  const mp::VersionedArray<mp_read_request> batch(requests, n, "io-uring: submit");
  check_batch(batch);  // everything is checked before anything is queued
  std::lock_guard lock(mutex_);
  Ticket& t = acquire_slot(ticket);
  plan(t, batch);
  if (t.chunks_left == 0) counters_.requests += n;
  issue();
  return MP_OK;
}

void UringTransport::plan(Ticket& t, const mp::VersionedArray<mp_read_request>& batch) {
  const uint32_t n = batch.size();
  t.n_requests = n;
  t.request_failed.assign(n, 0);
  uint64_t total = 0;
  for (uint32_t i = 0; i < n; ++i) {
    const mp_read_request r = batch[i];
    total += WindowPlan(r.offset, r.length, files_.find(r.file)->granule, config_.buffer_size).count();
  }
  t.chunks.resize(total);  // reuses the slot's capacity; never resized again while the ticket lives
  t.chunks_left = t.unissued = total;
  uint64_t next = 0;
  for (uint32_t i = 0; i < n; ++i) {
    const mp_read_request r = batch[i];
    UringFile* file = files_.find(r.file);
    const WindowPlan windows(r.offset, r.length, file->granule, config_.buffer_size);
    auto* dst = static_cast<unsigned char*>(r.dst);
    for (uint64_t w = 0; w < windows.count(); ++w) {
      Chunk& c = t.chunks[next++];
      c = Chunk{};
      c.ticket = &t;
      c.request = i;
      c.tag = r.tag;
      c.file = file;
      c.window = windows.at(w);
      c.dst = dst + r.dst_offset + c.window.into_request(r.offset);
      c.to_device = r.dst_kind == MP_MEM_DEVICE;
      // Host bytes go straight to the caller unless the window holds padding (O_DIRECT blocks) or
      // the destination lacks the file's buffer alignment; then they are staged and copied out.
      c.straight = !c.to_device && c.window.skip() == 0 && c.window.want_length == c.window.read_length &&
                   reinterpret_cast<uintptr_t>(c.dst) % file->memory_alignment == 0;
      c.progress.read_length = c.window.read_length;
      c.progress.want_end = c.window.skip() + c.window.want_length;
      c.progress.granule = file->granule;
      (r.priority == MP_READ_DEMAND ? demand_ : prefetch_).push(&c);
    }
  }
}

UringTransport::Ticket& UringTransport::acquire_slot(mp_ticket* ticket) {
  uint32_t slot;
  if (free_tickets_.empty()) {
    tickets_.push_back(std::make_unique<Ticket>());
    slot = uint32_t(tickets_.size() - 1);
  } else {
    slot = free_tickets_.back();
    free_tickets_.pop_back();
  }
  Ticket& t = *tickets_[slot];
  t.in_use = true;
  t.claimed = false;
  t.status = MP_OK;
  t.error.clear();
  t.failed_request = MP_NO_REQUEST;
  t.failed_tag = 0;
  *ticket = (uint64_t(t.generation) << 32) | (slot + 1u);
  return t;
}

UringTransport::Ticket& UringTransport::find(mp_ticket ticket, const char* op) {
  const uint64_t slot = ticket & 0xffffffffu;
  Ticket* t = slot == 0 || slot > tickets_.size() ? nullptr : tickets_[slot - 1].get();
  if (t == nullptr || !t->in_use || t->generation != uint32_t(ticket >> 32))
    throw mp::Error(MP_ERR_INVALID_ARG,
                    mp::format("io-uring: {}: unknown ticket {} (never submitted, or already reported)", op, ticket));
  if (t->claimed)
    throw mp::Error(MP_ERR_INVALID_ARG, mp::format("io-uring: {}: ticket {} is already being waited for", op, ticket));
  return *t;
}

bool UringTransport::still_live(mp_ticket ticket, const Ticket& t) const {
  return t.in_use && t.generation == uint32_t(ticket >> 32);
}

mp_status UringTransport::report(mp_ticket ticket, Ticket& t, mp_ticket_result* result) {
  const mp_status status = t.status;
  std::string error = std::move(t.error);
  result->failed_request = t.failed_request;
  result->failed_tag = t.failed_tag;
  result->failed_count = uint32_t(std::count(t.request_failed.begin(), t.request_failed.end(), 1));
  if (t.event != nullptr) {
    dev_->event_destroy(dev_->ctx, t.event);
    t.event = nullptr;
  }
  t.in_use = false;
  t.claimed = false;
  t.generation = t.generation == UINT32_MAX ? 1 : t.generation + 1;
  free_tickets_.push_back(uint32_t((ticket & 0xffffffffu) - 1));
  if (status != MP_OK) throw mp::Error(status, error);
  return MP_OK;
}

mp_status UringTransport::wait(mp_ticket ticket, mp_ticket_result* result) {
  std::unique_lock lock(mutex_);
  Ticket& t = find(ticket, "wait");
  t.claimed = true;  // a second waiter is refused instead of racing this one
  const uint64_t start = now_ns();
  try {
    while (t.chunks_left > 0) drive_or_wait(lock, &t, true);
  } catch (...) {
    t.claimed = false;
    throw;
  }
  counters_.wait_ns += now_ns() - start;
  return report(ticket, t, result);
}

mp_status UringTransport::poll(mp_ticket ticket, mp_ticket_result* result) {
  std::unique_lock lock(mutex_);
  Ticket& t = find(ticket, "poll");
  if (t.chunks_left > 0 && !driving_) {
    t.claimed = true;  // the driver may let go of the lock: nobody else reports it meanwhile
    try {
      drive_or_wait(lock, &t, false);
    } catch (...) {
      t.claimed = false;
      throw;
    }
    t.claimed = false;
  }
  if (t.chunks_left > 0) return MP_PENDING;
  return report(ticket, t, result);
}

mp_status UringTransport::ticket_event(mp_ticket ticket, mp_event* out) {
  if (out == nullptr) throw mp::Error(MP_ERR_INVALID_ARG, "io-uring: ticket_event: out is NULL");
  if (!device_copies_ || dev_->event_create == nullptr)
    throw mp::Error(MP_ERR_UNSUPPORTED, "io-uring: ticket_event: the host offers no copy stream and events");
  std::unique_lock lock(mutex_);
  Ticket* t = &find(ticket, "ticket_event");
  while (t->unissued > 0) {
    drive_or_wait(lock, t, true);
    if (!still_live(ticket, *t))
      throw mp::Error(MP_ERR_INVALID_ARG,
                      mp::format("io-uring: ticket_event: ticket {} was reported meanwhile", ticket));
  }
  if (t->event == nullptr && dev_->event_create(dev_->ctx, &t->event) != MP_OK) {
    t->event = nullptr;
    throw mp::Error(MP_ERR_DEVICE, "io-uring: ticket_event: cannot create an event");
  }
  // Recorded after every copy issued so far on the one copy stream, the ticket's included
  // (copies are issued with mutex_ held, so none can slip in between).
  if (dev_->event_record(dev_->ctx, t->event, copy_stream_) != MP_OK)
    throw mp::Error(MP_ERR_DEVICE, "io-uring: ticket_event: cannot record the event");
  *out = t->event;
  return MP_OK;
}

mp_status UringTransport::stats(mp_transport_stats* out) { return counters_.write(out, "io-uring: stats"); }

void UringTransport::set_completion_filter(CompletionFilter filter) {
  std::lock_guard lock(mutex_);
  filter_ = std::move(filter);
}

uint64_t UringTransport::ring_submits() const {
  std::lock_guard lock(mutex_);
  return ring_.submit_calls();
}

bool UringTransport::buffers_registered() const { return ring_.buffers_registered(); }

bool UringTransport::file_is_direct(uint32_t file) {
  std::lock_guard lock(mutex_);
  const UringFile* f = files_.find(file);
  return f != nullptr && f->direct;
}

}  // namespace moepage::uring
