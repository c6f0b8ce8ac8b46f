#include "pread_transport.hpp"

#include <algorithm>
#include <cstring>

#include "fileio/positional_read.hpp"
#include "request_checks.hpp"

namespace moepage::pread {
namespace {

constexpr int64_t kMaxThreads = 256;
constexpr uint64_t kMinChunk = 4096;
constexpr uint64_t kMaxChunk = uint64_t{1} << 30;

bool has_device_copies(const mp_host_api* host) {
  if (host == nullptr || !MP_HAS_FIELD(host, mp_host_api, device) || host->device == nullptr) return false;
  const mp_device_service* d = host->device;
  return MP_HAS_FIELD(d, mp_device_service, copy_to_device_async) && d->alloc_pinned && d->free_pinned &&
         d->stream_create && d->stream_destroy && d->stream_synchronize && d->copy_to_device_async;
}

}  // namespace

PreadTransport::PreadTransport(const mp_host_api* host, const mp::Options& options) : host_(host) {
  const int64_t threads = options.get_int("threads");
  if (threads < 1 || threads > kMaxThreads) {
    throw mp::Error(MP_ERR_INVALID_ARG,
                    mp::format("pread: option threads = {}: expected 1 to {} reader threads", threads, kMaxThreads));
  }
  chunk_bytes_ = options.get_size("chunk");
  if (chunk_bytes_ < kMinChunk || chunk_bytes_ > kMaxChunk) {
    throw mp::Error(MP_ERR_INVALID_ARG,
                    mp::format("pread: option chunk = {} bytes: expected 4KiB to 1GiB", chunk_bytes_));
  }
  bounce_.resize(static_cast<size_t>(threads));
  queue_ = std::make_unique<WorkQueue<Job>>(static_cast<uint32_t>(threads),
                                            [this](Job& job, uint32_t worker) { run(job, worker); });
  mp::HostLog(host_, "pread").debug("{} reader threads, chunks of {} bytes", threads, chunk_bytes_);
}

PreadTransport::~PreadTransport() {
  queue_.reset();  // joins the readers: nothing below is in use after this
  if (has_device_copies(host_)) {
    const mp_device_service* d = host_->device;
    for (Bounce& b : bounce_) {
      if (b.buffer != nullptr) d->free_pinned(d->ctx, b.buffer);
      if (b.stream != nullptr) d->stream_destroy(d->ctx, b.stream);
    }
  }
}

mp_status PreadTransport::open(const char* path, uint32_t* file) {
  if (path == nullptr || file == nullptr) throw mp::Error(MP_ERR_INVALID_ARG, "pread: open: path or file is NULL");
  // Pagers open each expert's file by path; the table keeps one descriptor per file.
  *file = files_.open(path);
  return MP_OK;
}

void PreadTransport::check_batch(const mp::VersionedArray<mp_read_request>& requests) {
  // Files are resolved now so readers never look a handle up.
  const uint32_t n = requests.size();
  resolved_.assign(n, nullptr);
  for (uint32_t i = 0; i < n; ++i) {
    const mp_read_request r = requests[i];
    resolved_[i] = files_.find(r.file);
    transport::check_read_request(r, i, {"pread", resolved_[i] != nullptr, files_.size(), has_device_copies(host_)});
  }
}

mp_status PreadTransport::submit(const mp_read_request* requests, uint32_t n, mp_ticket* ticket) {
  if (ticket == nullptr) throw mp::Error(MP_ERR_INVALID_ARG, "pread: submit: ticket is NULL");
  const mp::VersionedArray<mp_read_request> batch(requests, n, "pread: submit");

  std::lock_guard lock(slots_mutex_);  // also guards resolved_ and staging_
  // Check everything before queueing anything, so a bad batch leaves no half-run ticket behind.
  check_batch(batch);

  TicketState& state = acquire_slot(ticket);
  state.n_requests = n;
  state.request_failed.assign(n, 0);
  staging_.clear();
  size_t demand_jobs = 0;
  // Demand chunks first in staging_, then prefetch, so each group is one push.
  for (int pass = 0; pass < 2; ++pass) {
    const int32_t priority = pass == 0 ? MP_READ_DEMAND : MP_READ_PREFETCH;
    for (uint32_t i = 0; i < n; ++i) {
      const mp_read_request r = batch[i];
      if (r.priority != priority) continue;
      for (uint64_t done = 0; done < r.length; done += chunk_bytes_) {
        Job job;
        job.ticket = &state;
        job.file = resolved_[i];
        job.request = i;
        job.offset = r.offset + done;
        job.length = std::min(chunk_bytes_, r.length - done);
        job.dst = static_cast<unsigned char*>(r.dst) + r.dst_offset + done;
        job.to_device = r.dst_kind == MP_MEM_DEVICE;
        job.tag = r.tag;
        staging_.push_back(job);
      }
    }
    if (pass == 0) demand_jobs = staging_.size();
  }
  state.chunks_left.store(staging_.size());
  if (staging_.empty()) {
    std::lock_guard state_lock(state.mutex);
    state.done = true;
    counters_.requests += n;
    return MP_OK;
  }
  const std::span<const Job> jobs(staging_);
  queue_->push(jobs.subspan(0, demand_jobs), true);
  queue_->push(jobs.subspan(demand_jobs), false);
  return MP_OK;
}

PreadTransport::TicketState& PreadTransport::acquire_slot(mp_ticket* ticket) {
  uint32_t index;
  if (free_slots_.empty()) {
    slots_.push_back(std::make_unique<TicketState>());
    index = static_cast<uint32_t>(slots_.size() - 1);
  } else {
    index = free_slots_.back();
    free_slots_.pop_back();
  }
  TicketState& state = *slots_[index];
  state.in_use = true;
  state.done = false;
  state.outcome.reset();
  *ticket = (static_cast<uint64_t>(state.generation) << 32) | (index + 1u);
  return state;
}

PreadTransport::TicketState& PreadTransport::find(mp_ticket ticket, const char* op) {
  const uint64_t slot = ticket & 0xffffffffu;
  TicketState* state = slot == 0 || slot > slots_.size() ? nullptr : slots_[slot - 1].get();
  if (state == nullptr || !state->in_use || state->generation != (ticket >> 32)) {
    throw mp::Error(MP_ERR_INVALID_ARG,
                    mp::format("pread: {}: unknown ticket {} (never submitted, or already reported)", op, ticket));
  }
  if (state->claimed) {
    throw mp::Error(MP_ERR_INVALID_ARG, mp::format("pread: {}: ticket {} is already being waited for", op, ticket));
  }
  return *state;
}

void PreadTransport::retire(mp_ticket ticket) {
  std::lock_guard lock(slots_mutex_);
  const uint32_t index = static_cast<uint32_t>((ticket & 0xffffffffu) - 1);
  TicketState& state = *slots_[index];
  state.in_use = false;
  state.claimed = false;
  state.generation = state.generation == UINT32_MAX ? 1 : state.generation + 1;
  free_slots_.push_back(index);
}

mp_status PreadTransport::report(mp_ticket ticket, TicketState& state, mp_ticket_result* result) {
  mp_status status;
  std::string error;
  {
    std::lock_guard lock(state.mutex);
    status = state.outcome.status;
    if (status != MP_OK) error = state.outcome.error;
    state.outcome.describe(*result);
    result->failed_count =
        static_cast<uint32_t>(std::count(state.request_failed.begin(), state.request_failed.end(), 1));
  }
  retire(ticket);
  if (status != MP_OK) throw mp::Error(status, error);
  return MP_OK;
}

mp_status PreadTransport::wait(mp_ticket ticket, mp_ticket_result* result) {
  TicketState* state;
  {
    std::lock_guard lock(slots_mutex_);
    state = &find(ticket, "wait");
    state->claimed = true;  // a second waiter is refused instead of racing this one
  }
  const uint64_t start = now_ns();
  {
    std::unique_lock lock(state->mutex);
    state->finished.wait(lock, [state] { return state->done; });
  }
  counters_.wait_ns += now_ns() - start;
  return report(ticket, *state, result);
}

mp_status PreadTransport::poll(mp_ticket ticket, mp_ticket_result* result) {
  TicketState* state;
  {
    std::lock_guard lock(slots_mutex_);
    state = &find(ticket, "poll");
    std::lock_guard state_lock(state->mutex);
    if (!state->done) return MP_PENDING;
    state->claimed = true;
  }
  return report(ticket, *state, result);
}

void PreadTransport::run(Job& job, uint32_t worker) {
  const uint64_t start = now_ns();
  mp_status status = MP_OK;
  std::string error;
  if (job.to_device) {
    status = read_to_device(job, worker, error);
  } else {
    fileio::RangeRead r = fileio::read_range("pread", job.file->fd, job.file->path, job.offset, job.length, job.dst);
    counters_.bytes_read += r.bytes_read;
    status = r.status;
    error = std::move(r.message);
  }
  counters_.read_ns += now_ns() - start;
  finish_chunk(job, status, std::move(error));
}

mp_status PreadTransport::read_to_device(Job& job, uint32_t worker, std::string& error) {
  const mp_device_service* d = host_->device;
  Bounce& b = bounce_[worker];
  if (b.buffer == nullptr) {
    if (d->alloc_pinned(d->ctx, chunk_bytes_, &b.buffer) != MP_OK || b.buffer == nullptr) {
      b.buffer = nullptr;
      error = mp::format("pread: cannot allocate a {}-byte pinned bounce buffer", chunk_bytes_);
      return MP_ERR_OOM;
    }
  }
  if (b.stream == nullptr && d->stream_create(d->ctx, &b.stream) != MP_OK) {
    b.stream = nullptr;
    error = "pread: cannot create a copy stream";
    return MP_ERR_DEVICE;
  }
  fileio::RangeRead r = fileio::read_range("pread", job.file->fd, job.file->path, job.offset, job.length, b.buffer);
  counters_.bytes_read += r.bytes_read;
  if (r.status != MP_OK) {
    error = std::move(r.message);
    return r.status;
  }
  // The copy is ordered on this reader's own stream and finished before the bounce buffer is reused.
  const uint64_t copy_start = now_ns();
  mp_status s = d->copy_to_device_async(d->ctx, job.dst, b.buffer, job.length, b.stream);
  if (s == MP_OK) s = d->stream_synchronize(d->ctx, b.stream);
  counters_.copy_ns += now_ns() - copy_start;
  if (s != MP_OK) {
    error = mp::format("pread: {}: copying {} bytes read at offset {} to the device failed ({})", job.file->path,
                       job.length, job.offset, mp_status_name(s));
  }
  return s;
}

void PreadTransport::finish_chunk(const Job& job, mp_status status, std::string&& error) {
  TicketState& ticket = *job.ticket;
  if (status != MP_OK) {
    std::lock_guard lock(ticket.mutex);
    ticket.outcome.record_failure(status, std::move(error), job.request, job.tag);
    ticket.request_failed[job.request] = 1;
  }
  if (ticket.chunks_left.fetch_sub(1) != 1) return;
  std::lock_guard lock(ticket.mutex);
  const auto failed = static_cast<uint64_t>(std::count(ticket.request_failed.begin(), ticket.request_failed.end(), 1));
  counters_.requests += ticket.n_requests;
  counters_.errors += failed;
  ticket.done = true;
  ticket.finished.notify_all();
}

mp_status PreadTransport::stats(mp_transport_stats* out) { return counters_.write(out, "pread: stats"); }

}  // namespace moepage::pread
