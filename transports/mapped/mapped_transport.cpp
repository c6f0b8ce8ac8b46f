#include "mapped_transport.hpp"

#include <unistd.h>

#include "fileio/positional_read.hpp"
#include "request_checks.hpp"

namespace moepage::transport {

namespace {

const mp_device_service* device_of(const mp_host_api* host) {
  return host != nullptr && MP_HAS_FIELD(host, mp_host_api, device) ? host->device : nullptr;
}

bool can_register(const mp_device_service* d) {
  return d != nullptr && MP_HAS_FIELD(d, mp_device_service, unregister_host) && d->register_host != nullptr &&
         d->unregister_host != nullptr;
}

// max_locked: auto is 80% of the host's physical memory (the rest for the process and the system).
uint64_t max_locked_of(const mp::Options& options) {
  if (!options.is_auto("max_locked")) return options.get_size("max_locked");
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? uint64_t(pages) * uint64_t(page) / 5 * 4 : 0;
}

}  // namespace

MappedTransport::MappedTransport(const mp_host_api* host, const mp::Options& options)
    : host_(host), dev_(device_of(host)), prefetch_lane_(options.get_string("prefetch_lane") == "own") {
  const bool gpu = dev_ != nullptr && dev_->kind == MP_DEVICE_HIP;
  if (gpu && !can_register(dev_))
    throw mp::Error(MP_ERR_UNSUPPORTED,
                    "mapped: the host's device service cannot register host memory (register_host, ABI 1.6); use "
                    "pinned-async");
  files_ = std::make_unique<MappedFiles>(gpu ? dev_ : nullptr, max_locked_of(options));
  // Streams and events for ticket_event on any device that has them; device copies only on a GPU
  // (on the CPU device every read is a pread into the destination).
  if (dev_ == nullptr || dev_->stream_create == nullptr || dev_->event_create == nullptr) {
    if (gpu) throw mp::Error(MP_ERR_DEVICE, "mapped: the device service has no streams or events");
    return;
  }
  auto cleanup = [this] {
    for (mp_stream& s : streams_)
      if (s != nullptr) dev_->stream_destroy(dev_->ctx, s);
  };
  for (mp_stream& s : streams_)
    if (dev_->stream_create(dev_->ctx, &s) != MP_OK || s == nullptr) {
      s = nullptr;
      cleanup();
      throw mp::Error(MP_ERR_DEVICE, "mapped: cannot create its copy streams");
    }
  if (dev_->event_create(dev_->ctx, &join_) != MP_OK) {
    join_ = nullptr;
    cleanup();
    throw mp::Error(MP_ERR_DEVICE, "mapped: cannot create an event");
  }
  events_ = true;
  device_copies_ = gpu;
}

MappedTransport::~MappedTransport() {
  // Copies still running read the mappings: they finish before the files are unregistered.
  for (mp_stream s : streams_)
    if (s != nullptr) dev_->stream_synchronize(dev_->ctx, s);
  tickets_.for_each([this](Ticket& t) {
    if (t.event != nullptr) dev_->event_destroy(dev_->ctx, t.event);
  });
  if (join_ != nullptr) dev_->event_destroy(dev_->ctx, join_);
  for (mp_stream s : streams_)
    if (s != nullptr) dev_->stream_destroy(dev_->ctx, s);
  files_.reset();
}

mp_status MappedTransport::open(const char* path, uint32_t* file) {
  if (file == nullptr) throw mp::Error(MP_ERR_INVALID_ARG, "mapped: open: file is NULL");
  *file = files_->open(path);
  return MP_OK;
}

int MappedTransport::lane_of(const mp_read_request& r) const {
  return r.priority == MP_READ_PREFETCH && prefetch_lane_ ? 1 : 0;
}

bool MappedTransport::continues(const mp_read_request& r, const mp_read_request& next) const {
  return next.file == r.file && next.dst_kind == MP_MEM_DEVICE && next.dst == r.dst &&
         next.offset == r.offset + r.length && next.dst_offset == r.dst_offset + r.length &&
         lane_of(next) == lane_of(r);
}

uint32_t MappedTransport::copy_run(const mp::VersionedArray<mp_read_request>& batch, uint32_t first,
                                   TicketOutcome& outcome, uint32_t& failed, bool& copies, bool (&used)[2]) {
  const mp_read_request r = batch[first];
  uint32_t end = first + 1;
  uint64_t length = r.length;
  for (mp_read_request prev = r; end < batch.size(); ++end) {
    const mp_read_request next = batch[end];
    if (!continues(prev, next)) break;
    length += next.length;
    prev = next;
  }
  const MappedFile& f = *files_->find(r.file);
  if (end - first == 1 || r.offset > f.size || length > f.size - r.offset) {
    // One read, or a run that leaves the file: each read on its own, so the one past the end is
    // the one named.
    for (uint32_t i = first; i < end; ++i) read_one(batch[i], i, outcome, failed, copies, used);
    return end;
  }
  unsigned char* dst = static_cast<unsigned char*>(r.dst) + r.dst_offset;
  const int lane = lane_of(r);
  if (const mp_status s = dev_->copy_to_device_async(dev_->ctx, dst, f.bytes + r.offset, length, streams_[lane]);
      s != MP_OK) {
    failed += end - first;  // every read of the run is lost with its one copy
    outcome.record_failure(MP_ERR_DEVICE,
                           mp::format("mapped: {}: copying {} bytes at offset {} to the device (requests {} to {}, "
                                      "one copy) failed ({})",
                                      f.file->path, length, r.offset, first, end - 1, mp_status_name(s)),
                           first, r.tag);
    return end;
  }
  counters_.bytes_read += length;
  copies = true;
  used[lane] = true;
  return end;
}

void MappedTransport::read_one(const mp_read_request& r, uint32_t index, TicketOutcome& outcome, uint32_t& failed,
                               bool& copies, bool (&used)[2]) {
  if (r.length == 0) return;
  const MappedFile& f = *files_->find(r.file);
  unsigned char* dst = static_cast<unsigned char*>(r.dst) + r.dst_offset;
  if (!(device_copies_ && r.dst_kind == MP_MEM_DEVICE)) {
    const fileio::RangeRead rr = fileio::read_range("mapped", f.file->fd, f.file->path, r.offset, r.length, dst);
    counters_.bytes_read += rr.bytes_read;
    if (rr.status != MP_OK) {
      ++failed;
      outcome.record_failure(rr.status, rr.message, index, r.tag);
    }
    return;
  }
  if (r.offset > f.size || r.length > f.size - r.offset) {
    ++failed;
    outcome.record_failure(MP_ERR_IO,
                           mp::format("mapped: {}: unexpected end of file at offset {} (wanted {} bytes; the file "
                                      "had {} when it was opened)",
                                      f.file->path, r.offset, r.length, f.size),
                           index, r.tag);
    return;
  }
  const int lane = lane_of(r);
  if (const mp_status s = dev_->copy_to_device_async(dev_->ctx, dst, f.bytes + r.offset, r.length, streams_[lane]);
      s != MP_OK) {
    ++failed;
    outcome.record_failure(MP_ERR_DEVICE,
                           mp::format("mapped: {}: copying {} bytes at offset {} to the device failed ({})",
                                      f.file->path, r.length, r.offset, mp_status_name(s)),
                           index, r.tag);
    return;
  }
  counters_.bytes_read += r.length;
  copies = true;
  used[lane] = true;
}

mp_status MappedTransport::submit(const mp_read_request* requests, uint32_t n, mp_ticket* ticket) {
  if (ticket == nullptr) throw mp::Error(MP_ERR_INVALID_ARG, "mapped: submit: ticket is NULL");
  const mp::VersionedArray<mp_read_request> batch(requests, n, "mapped: submit");
  // The CPU device's memory is host memory: a device destination there is read into directly.
  const bool device_ok = device_copies_ || (dev_ != nullptr && dev_->kind == MP_DEVICE_CPU);
  for (uint32_t i = 0; i < batch.size(); ++i) {
    const mp_read_request r = batch[i];
    check_read_request(r, i, {"mapped", files_->find(r.file) != nullptr, files_->size(), device_ok});
  }
  std::lock_guard lock(mutex_);
  const uint32_t slot = tickets_.take();
  Ticket& t = tickets_[slot];
  t.copies = false;
  t.n_requests = n;
  t.failed = 0;
  t.outcome.reset();
  const uint64_t t0 = now_ns();
  bool used[2] = {false, false};
  for (uint32_t i = 0; i < batch.size();) {
    const mp_read_request r = batch[i];
    if (device_copies_ && r.dst_kind == MP_MEM_DEVICE && r.length > 0) {
      i = copy_run(batch, i, t.outcome, t.failed, t.copies, used);
    } else {
      read_one(r, i, t.outcome, t.failed, t.copies, used);
      ++i;
    }
  }
  if (t.copies) {
    // One event after every copy of the ticket: the prefetch lane joins the demand lane first.
    mp_status s = MP_OK;
    if (t.event == nullptr) s = dev_->event_create(dev_->ctx, &t.event);
    mp_stream last = used[0] ? streams_[0] : streams_[1];
    if (s == MP_OK && used[0] && used[1]) {
      s = dev_->event_record(dev_->ctx, join_, streams_[1]);
      if (s == MP_OK) s = dev_->stream_wait_event(dev_->ctx, streams_[0], join_);
    }
    if (s == MP_OK) s = dev_->event_record(dev_->ctx, t.event, last);
    if (s != MP_OK) {
      // The copies were issued but cannot be waited for one by one: wait for them all here.
      for (mp_stream st : streams_) dev_->stream_synchronize(dev_->ctx, st);
      t.copies = false;
      ++t.failed;
      t.outcome.record_failure(
          MP_ERR_DEVICE, mp::format("mapped: cannot record the event after a ticket's copies ({})", mp_status_name(s)),
          MP_NO_REQUEST, 0);
    }
  }
  counters_.copy_ns += now_ns() - t0;
  *ticket = tickets_.handle(slot);
  return MP_OK;
}

mp_status MappedTransport::report(mp_ticket ticket, Ticket& t, mp_ticket_result* result) {
  const mp_status status = t.outcome.status;
  const std::string error = std::move(t.outcome.error);
  t.outcome.describe(*result);
  result->failed_count = t.failed > t.n_requests ? t.n_requests : t.failed;
  counters_.requests += t.n_requests;
  counters_.errors += result->failed_count;
  tickets_.retire(ticket);
  if (status != MP_OK) throw mp::Error(status, error);
  return MP_OK;
}

void MappedTransport::copies_failed(Ticket& t, mp_status event_status) {
  if (event_status == MP_OK) return;
  ++t.failed;  // which copy failed the device does not say
  t.outcome.record_failure(MP_ERR_DEVICE, mp::format("mapped: a device copy failed ({})", mp_status_name(event_status)),
                           MP_NO_REQUEST, 0);
}

mp_status MappedTransport::wait(mp_ticket ticket, mp_ticket_result* result) {
  std::unique_lock lock(mutex_);
  Ticket& t = tickets_.find(ticket, "wait");
  if (t.copies) {
    t.claimed = true;  // a second waiter is refused instead of retiring the slot twice
    const mp_event e = t.event;
    lock.unlock();
    const uint64_t t0 = now_ns();
    const mp_status s = dev_->event_synchronize(dev_->ctx, e);
    counters_.wait_ns += now_ns() - t0;
    lock.lock();
    copies_failed(t, s);
  }
  return report(ticket, t, result);
}

mp_status MappedTransport::poll(mp_ticket ticket, mp_ticket_result* result) {
  std::lock_guard lock(mutex_);
  Ticket& t = tickets_.find(ticket, "poll");
  if (t.copies) {
    const mp_status s = dev_->event_query(dev_->ctx, t.event);
    if (s == MP_PENDING) return MP_PENDING;
    copies_failed(t, s);
  }
  return report(ticket, t, result);
}

mp_status MappedTransport::ticket_event(mp_ticket ticket, mp_event* out) {
  if (out == nullptr) throw mp::Error(MP_ERR_INVALID_ARG, "mapped: ticket_event: out is NULL");
  if (!events_) throw mp::Error(MP_ERR_UNSUPPORTED, "mapped: ticket_event: the device service has no events");
  std::lock_guard lock(mutex_);
  Ticket& t = tickets_.find(ticket, "ticket_event");
  if (!t.copies) {  // nothing to copy (host reads, or none): an event that is complete at once
    if (t.event == nullptr && dev_->event_create(dev_->ctx, &t.event) != MP_OK) {
      t.event = nullptr;
      throw mp::Error(MP_ERR_DEVICE, "mapped: ticket_event: cannot create an event");
    }
    if (dev_->event_record(dev_->ctx, t.event, streams_[0]) != MP_OK)
      throw mp::Error(MP_ERR_DEVICE, "mapped: ticket_event: cannot record the event");
    t.copies = true;  // wait() and poll() now follow the event
  }
  *out = t.event;
  return MP_OK;
}

mp_status MappedTransport::stats(mp_transport_stats* out) { return counters_.write(out, "mapped: stats"); }

}  // namespace moepage::transport
