#include "odirect_transport.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "aligned_reader.hpp"

namespace odirect {
namespace {

constexpr int64_t kMaxThreads = 64;
constexpr uint64_t kMinAlignment = 512;
constexpr uint64_t kMaxAlignment = uint64_t{1} << 20;
constexpr uint64_t kMaxBuffer = uint64_t{1} << 30;

bool is_power_of_two(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

}  // namespace

OdirectTransport::OdirectTransport(const mp_host_api* host, const mp::Options& options)
    : host_(host), log_(host, "odirect") {
  const int64_t threads = options.get_int("threads");
  if (threads < 1 || threads > kMaxThreads) {
    throw mp::Error(MP_ERR_INVALID_ARG,
                    mp::format("odirect: option threads = {}: expected 1 to {}", threads, kMaxThreads));
  }
  alignment_ = options.get_size("alignment");
  if (!is_power_of_two(alignment_) || alignment_ < kMinAlignment || alignment_ > kMaxAlignment) {
    throw mp::Error(
        MP_ERR_INVALID_ARG,
        mp::format("odirect: option alignment = {} bytes: expected a power of two from 512 to 1MiB", alignment_));
  }
  buffer_bytes_ = options.get_size("buffer");
  if (buffer_bytes_ < alignment_ || buffer_bytes_ % alignment_ != 0 || buffer_bytes_ > kMaxBuffer) {
    throw mp::Error(
        MP_ERR_INVALID_ARG,
        mp::format("odirect: option buffer = {} bytes: expected a multiple of alignment ({} bytes) up to 1GiB",
                   buffer_bytes_, alignment_));
  }
  fallback_buffered_ = options.get_string("fallback") == "buffered";

  workers_.resize(static_cast<size_t>(threads));
  // Bounce buffers are made before any thread starts, so a failure leaves nothing running.
  try {
    for (Worker& w : workers_) allocate_bounce(w);
  } catch (...) {
    for (Worker& w : workers_) free_bounce(w);
    throw;
  }
  for (Worker& w : workers_) w.thread = std::thread([this, &w] { work(w); });
  log_.debug("{} threads, {}-byte bounce buffers, alignment {}", threads, buffer_bytes_, alignment_);
}

OdirectTransport::~OdirectTransport() {
  {
    std::lock_guard lock(queue_mutex_);
    stopping_ = true;  // requests not started yet are dropped; their tickets never complete
    demand_.clear();
    prefetch_.clear();
  }
  queue_ready_.notify_all();
  for (Worker& w : workers_) {
    if (w.thread.joinable()) w.thread.join();
  }
  const mp_device_service* d = device_copies() ? host_->device : nullptr;
  for (Worker& w : workers_) {
    if (w.stream != nullptr && d != nullptr) d->stream_destroy(d->ctx, w.stream);
    free_bounce(w);
  }
  for (File& f : files_) {
    if (f.direct_fd >= 0) ::close(f.direct_fd);
    if (f.buffered_fd >= 0) ::close(f.buffered_fd);
  }
}

void OdirectTransport::allocate_bounce(Worker& w) {
  const mp_device_service* d = device_copies() ? host_->device : nullptr;
  if (d != nullptr && d->alloc_pinned != nullptr && d->free_pinned != nullptr) {
    // alloc_pinned promises no alignment beyond the platform's: over-allocate and align inside.
    void* block = nullptr;
    if (d->alloc_pinned(d->ctx, buffer_bytes_ + alignment_, &block) != MP_OK || block == nullptr)
      throw mp::Error(MP_ERR_OOM, mp::format("odirect: cannot allocate a {}-byte pinned bounce buffer", buffer_bytes_));
    const auto at = reinterpret_cast<uintptr_t>(block);
    w.block = block;
    w.bounce = static_cast<unsigned char*>(block) + ((alignment_ - at % alignment_) % alignment_);
    w.bounce_pinned = true;
    return;
  }
  void* p = nullptr;
  if (::posix_memalign(&p, alignment_, buffer_bytes_) != 0 || p == nullptr)
    throw mp::Error(MP_ERR_OOM, mp::format("odirect: cannot allocate a {}-byte bounce buffer aligned to {}",
                                           buffer_bytes_, alignment_));
  w.block = p;
  w.bounce = static_cast<unsigned char*>(p);
}

void OdirectTransport::free_bounce(Worker& w) noexcept {
  if (w.block == nullptr) return;
  if (w.bounce_pinned) host_->device->free_pinned(host_->device->ctx, w.block);
  else std::free(w.block);
  w.block = nullptr;
  w.bounce = nullptr;
}

bool OdirectTransport::device_copies() const {
  if (host_ == nullptr || !MP_HAS_FIELD(host_, mp_host_api, device) || host_->device == nullptr) return false;
  const mp_device_service* d = host_->device;
  return MP_HAS_FIELD(d, mp_device_service, copy_to_device_async) && d->stream_create && d->stream_destroy &&
         d->stream_synchronize && d->copy_to_device_async;
}

mp_status OdirectTransport::open(const char* path, uint32_t* file) {
  if (path == nullptr || file == nullptr) throw mp::Error(MP_ERR_INVALID_ARG, "odirect: open: path or file is NULL");
  std::lock_guard lock(files_mutex_);
  for (size_t i = 0; i < files_.size(); ++i) {
    if (files_[i].path == path) {
      *file = static_cast<uint32_t>(i);
      return MP_OK;
    }
  }
  const int direct = ::open(path, O_RDONLY | O_CLOEXEC | O_DIRECT);
  const int direct_errno = errno;
  if (direct < 0 && direct_errno != EINVAL) {
    throw mp::Error(MP_ERR_IO, mp::format("odirect: cannot open {}: {}", path, std::strerror(direct_errno)));
  }
  if (direct < 0 && !fallback_buffered_) {
    throw mp::Error(MP_ERR_UNSUPPORTED, mp::format("odirect: the filesystem of {} refuses O_DIRECT (EINVAL); use "
                                                   "fallback: buffered or another transport",
                                                   path));
  }
  int buffered = -1;
  if (fallback_buffered_) {
    buffered = ::open(path, O_RDONLY | O_CLOEXEC);
    if (buffered < 0) {
      const int err = errno;
      if (direct >= 0) ::close(direct);
      throw mp::Error(MP_ERR_IO, mp::format("odirect: cannot open {}: {}", path, std::strerror(err)));
    }
  }
  struct stat st {};
  if (::fstat(direct >= 0 ? direct : buffered, &st) != 0 || S_ISDIR(st.st_mode)) {
    if (direct >= 0) ::close(direct);
    if (buffered >= 0) ::close(buffered);
    throw mp::Error(MP_ERR_IO, mp::format("odirect: cannot read {}: not a regular file", path));
  }
  if (direct < 0) log_.warn("{}: the filesystem refuses O_DIRECT; reading it through the page cache", path);
  File& f = files_.emplace_back();
  f.path = path;
  f.direct_fd = direct;
  f.buffered_fd = buffered;
  f.direct_refused = direct < 0;
  *file = static_cast<uint32_t>(files_.size() - 1);
  return MP_OK;
}

mp_status OdirectTransport::submit(const mp_read_request* requests, uint32_t n, mp_ticket* ticket) {
  if (ticket == nullptr) throw mp::Error(MP_ERR_INVALID_ARG, "odirect: submit: ticket is NULL");
  // Requests are read with the stride of the caller's struct_size (a newer host's are larger).
  const mp::VersionedArray<mp_read_request> batch(requests, n, "odirect: submit");
  // Everything is checked before anything is queued: a bad batch leaves no half-run ticket.
  std::vector<Job> jobs;
  jobs.reserve(n);
  auto state = std::make_shared<Ticket>();
  {
    std::lock_guard lock(files_mutex_);
    for (uint32_t i = 0; i < n; ++i) {
      const mp_read_request r = batch[i];
      if (r.file >= files_.size()) {
        throw mp::Error(MP_ERR_INVALID_ARG, mp::format("odirect: request {}: unknown file handle {} (opened: {})", i,
                                                       r.file, files_.size()));
      }
      if (r.length > 0 && r.dst == nullptr)
        throw mp::Error(MP_ERR_INVALID_ARG, mp::format("odirect: request {}: dst is NULL", i));
      if (r.offset + r.length < r.offset) {
        throw mp::Error(MP_ERR_INVALID_ARG, mp::format("odirect: request {}: offset + length overflows", i));
      }
      if (r.dst_kind != MP_MEM_HOST && r.dst_kind != MP_MEM_DEVICE) {
        throw mp::Error(MP_ERR_INVALID_ARG, mp::format("odirect: request {}: unknown dst_kind {}", i, r.dst_kind));
      }
      if (r.dst_kind == MP_MEM_DEVICE && r.length > 0 && !device_copies()) {
        throw mp::Error(MP_ERR_UNSUPPORTED,
                        mp::format("odirect: request {}: device destination, but the host offers no device copies", i));
      }
      if (r.length > 0) jobs.push_back(Job{state, &files_[r.file], r, i});
    }
  }
  state->left = static_cast<uint32_t>(jobs.size());
  {
    std::lock_guard lock(tickets_mutex_);
    *ticket = next_ticket_++;
    tickets_.emplace(*ticket, state);
  }
  counters_.requests += n - jobs.size();  // zero-length requests complete here
  if (jobs.empty()) return MP_OK;         // nothing to read: complete at once
  {
    std::lock_guard lock(queue_mutex_);
    for (Job& j : jobs) (j.request.priority == MP_READ_PREFETCH ? prefetch_ : demand_).push_back(std::move(j));
  }
  queue_ready_.notify_all();
  return MP_OK;
}

void OdirectTransport::work(Worker& worker) {
  for (;;) {
    Job job;
    {
      std::unique_lock lock(queue_mutex_);
      queue_ready_.wait(lock, [this] { return stopping_ || !demand_.empty() || !prefetch_.empty(); });
      if (stopping_) return;
      std::deque<Job>& q = !demand_.empty() ? demand_ : prefetch_;
      job = std::move(q.front());
      q.pop_front();
    }
    std::string error;
    const mp_status s = run(worker, job, error);
    if (s != MP_OK && job.request.tag != 0) error += mp::format(" [tag {}]", job.request.tag);
    finish(job, s, std::move(error));
  }
}

mp_status OdirectTransport::run(Worker& worker, const Job& job, std::string& error) {
  const mp_read_request& r = job.request;
  File& f = *job.file;
  const bool to_device = r.dst_kind == MP_MEM_DEVICE;
  const mp_device_service* d = to_device ? host_->device : nullptr;
  if (to_device && worker.stream == nullptr && d->stream_create(d->ctx, &worker.stream) != MP_OK) {
    worker.stream = nullptr;
    error = "odirect: cannot create a copy stream";
    return MP_ERR_DEVICE;
  }
  unsigned char* dst = static_cast<unsigned char*>(r.dst) + r.dst_offset;
  // The sink copies the requested part of each window out of the bounce buffer.
  const Sink sink = [&](uint64_t at, const unsigned char* bytes, uint64_t count, std::string& err) -> mp_status {
    if (!to_device) {
      std::memcpy(dst + at, bytes, count);
      return MP_OK;
    }
    const uint64_t start = now_ns();
    mp_status s = d->copy_to_device_async(d->ctx, dst + at, bytes, count, worker.stream);
    if (s == MP_OK) s = d->stream_synchronize(d->ctx, worker.stream);  // the bounce buffer is reused next
    counters_.copy_ns += now_ns() - start;
    if (s != MP_OK) err = mp::format("copying {} bytes to the device failed ({})", count, mp_status_name(s));
    return s;
  };
  AlignedReadArgs args;
  args.path = &f.path;
  args.offset = r.offset;
  args.length = r.length;
  args.alignment = alignment_;
  args.bounce = worker.bounce;
  args.bounce_bytes = buffer_bytes_;

  const uint64_t start = now_ns();
  int err_no = 0;
  WindowResult w;
  if (!f.direct_refused) {
    args.fd = f.direct_fd;
    w = read_aligned(args, sink, &err_no);
    counters_.bytes_read += w.bytes_from_disk;
    // Some filesystems accept the O_DIRECT open and refuse the read itself.
    if (w.status != MP_OK && err_no == EINVAL && fallback_buffered_) {
      if (!f.direct_refused.exchange(true)) {
        log_.warn("{}: O_DIRECT reads are refused (EINVAL); reading it through the page cache", f.path);
      }
    }
  }
  if (f.direct_refused) {
    args.fd = f.buffered_fd;
    w = read_aligned(args, sink, &err_no);
    counters_.bytes_read += w.bytes_from_disk;
  }
  counters_.read_ns += now_ns() - start;
  if (w.status != MP_OK) error = "odirect: " + w.message;
  return w.status;
}

void OdirectTransport::finish(const Job& job, mp_status status, std::string&& error) {
  Ticket& ticket = *job.ticket;
  ++counters_.requests;
  if (status != MP_OK) ++counters_.errors;
  std::lock_guard lock(ticket.mutex);
  if (status != MP_OK && ticket.failed_count++ == 0) {  // the first error is the ticket's error
    ticket.status = status;
    ticket.error = std::move(error);
    ticket.failed_request = job.index;
    ticket.failed_tag = job.request.tag;
  }
  if (--ticket.left == 0) ticket.finished.notify_all();
}

std::shared_ptr<OdirectTransport::Ticket> OdirectTransport::take(mp_ticket ticket, bool only_if_done, bool* pending) {
  std::lock_guard lock(tickets_mutex_);
  auto it = tickets_.find(ticket);
  if (it == tickets_.end()) {
    throw mp::Error(MP_ERR_INVALID_ARG,
                    mp::format("odirect: unknown ticket {} (never submitted, or already completed)", ticket));
  }
  std::shared_ptr<Ticket> state = it->second;
  if (only_if_done) {
    std::lock_guard state_lock(state->mutex);
    *pending = state->left != 0;
    if (*pending) return state;
  }
  tickets_.erase(it);
  return state;
}

mp_status OdirectTransport::report(Ticket& ticket, mp_ticket_result* result) {
  result->failed_request = ticket.failed_request;
  result->failed_tag = ticket.failed_tag;
  result->failed_count = ticket.failed_count;
  if (ticket.status != MP_OK) throw mp::Error(ticket.status, ticket.error);
  return MP_OK;
}

mp_status OdirectTransport::wait(mp_ticket ticket, mp_ticket_result* result) {
  std::shared_ptr<Ticket> state = take(ticket, false, nullptr);
  const uint64_t start = now_ns();
  std::unique_lock lock(state->mutex);
  state->finished.wait(lock, [&] { return state->left == 0; });
  counters_.wait_ns += now_ns() - start;
  return report(*state, result);
}

mp_status OdirectTransport::poll(mp_ticket ticket, mp_ticket_result* result) {
  bool pending = false;
  std::shared_ptr<Ticket> state = take(ticket, true, &pending);
  if (pending) return MP_PENDING;
  std::lock_guard lock(state->mutex);
  return report(*state, result);
}

// Only what the caller's struct_size covers is written.
mp_status OdirectTransport::stats(mp_transport_stats* out) { return counters_.write(out, "odirect: stats"); }

}  // namespace odirect
