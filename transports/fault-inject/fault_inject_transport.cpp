// The `fault-inject` transport — FOR TESTS ONLY. It performs real positional reads, synchronously
// inside submit(), and injects the faults its options choose, so tests can show that pagers fail
// closed (a failed or short read never leaves a slot valid; the error names layer, expert, file
// and offset; the next access reads again). Never put it in a production profile.
//
// A request is faulted when fault budget is left (fail_times; 0 = unlimited) and either
//   fail_every = N > 0 and it is the N-th, 2N-th, ... request this instance sees, or
//   fail_offset = O >= 0 and its file range [offset, offset + length) holds byte O.
// reads = prefetch faults only speculative reads (a run then never fails, and its tokens must
// equal a clean run's: the soak benchmark's check); all (the default) faults any read.
// fault = eio: nothing is written and the read fails as an I/O error;
// fault = short: the first half of the range is written, then it fails as a short read.
// delay_us delays every request (to widen race windows). fail_status is the status injected
// faults fail with (io, device or internal), so tests can see a pager pass it on unchanged.
#include <chrono>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "file_table.hpp"
#include "fileio/positional_read.hpp"
#include "moepage/cpp/plugin_adapter.hpp"

namespace {

using moepage::fileio::read_range;
using moepage::transport::FileTable;
using moepage::transport::OpenFile;

constexpr mp_option_def kOptions[] = {
    mp::option(MP_OPT_INT, "fail_every", "0", "fault every N-th request (0: never by count)"),
    mp::option(MP_OPT_INT, "fail_offset", "-1", "fault every request whose range holds this file offset (-1: none)"),
    mp::option(MP_OPT_INT, "fail_times", "0", "faults to inject before reading normally again (0: unlimited)"),
    mp::enum_option("fault", "eio|short", "eio",
                    "eio: an I/O error, nothing written; short: half the bytes, then fail"),
    mp::option(MP_OPT_INT, "delay_us", "0", "microseconds to sleep before every request"),
    mp::enum_option("fail_status", "io|device|internal", "io",
                    "the status an injected fault fails with (pagers must pass it on unchanged)"),
    mp::enum_option("reads", "all|prefetch", "all", "which reads may be faulted: all, or prefetch reads only"),
};

class FaultInjectTransport {
 public:
  FaultInjectTransport(const mp_host_api* host, const mp::Options& options)
      : host_(host),
        fail_every_(options.get_int("fail_every")),
        fail_offset_(options.get_int("fail_offset")),
        fail_times_(options.get_int("fail_times")),
        short_reads_(options.get_string("fault") == "short"),
        delay_us_(options.get_int("delay_us")),
        prefetch_only_(options.get_string("reads") == "prefetch"),
        fail_status_(status_named(options.get_string("fail_status"))) {
    if (fail_every_ < 0 || fail_times_ < 0 || delay_us_ < 0)
      throw mp::Error(MP_ERR_INVALID_ARG, "fault-inject: fail_every, fail_times and delay_us must be 0 or more");
  }

  mp_status open(const char* path, uint32_t* file) {
    if (file == nullptr) throw mp::Error(MP_ERR_INVALID_ARG, "fault-inject: open: file is NULL");
    *file = files_.open(path);
    return MP_OK;
  }

  ~FaultInjectTransport() {
    if (bounce_ != nullptr) host_->device->free_pinned(host_->device->ctx, bounce_);
    if (copy_stream_ != nullptr && host_->device->stream_destroy != nullptr)
      host_->device->stream_destroy(host_->device->ctx, copy_stream_);
  }
  FaultInjectTransport(const FaultInjectTransport&) = delete;
  FaultInjectTransport& operator=(const FaultInjectTransport&) = delete;

  mp_status submit(const mp_read_request* requests, uint32_t n, mp_ticket* ticket) {
    if (ticket == nullptr) throw mp::Error(MP_ERR_INVALID_ARG, "fault-inject: submit: ticket is NULL");
    const mp::VersionedArray<mp_read_request> batch(requests, n, "fault-inject: submit");
    std::lock_guard lock(mutex_);
    for (uint32_t i = 0; i < n; ++i) {  // the whole batch is checked before anything is read
      const mp_read_request r = batch[i];
      if (files_.find(r.file) == nullptr || (r.dst == nullptr && r.length > 0))
        throw mp::Error(MP_ERR_INVALID_ARG,
                        mp::format("fault-inject: request {}: unknown file {} or NULL dst", i, r.file));
    }
    Result result;
    for (uint32_t i = 0; i < n; ++i) {
      const mp_read_request r = batch[i];
      if (delay_us_ > 0) std::this_thread::sleep_for(std::chrono::microseconds(delay_us_));
      ++seen_;
      const mp_status s = r.length == 0 ? MP_OK : read_one(r, *files_.find(r.file), result);
      stats_.requests++;
      if (s == MP_OK) continue;
      stats_.errors++;
      if (result.failed_count++ == 0) {
        result.failed_request = i;
        result.failed_tag = r.tag;
      }
    }
    *ticket = next_ticket_++;
    results_.emplace(*ticket, std::move(result));
    return MP_OK;
  }

  mp_status wait(mp_ticket ticket, mp_ticket_result* result) { return finish(ticket, result); }
  mp_status poll(mp_ticket ticket, mp_ticket_result* result) { return finish(ticket, result); }

  mp_status stats(mp_transport_stats* out) {
    std::lock_guard lock(mutex_);
    mp::write_out(out, stats_, "fault-inject: stats");
    return MP_OK;
  }

 private:
  struct Result {
    mp_status status = MP_OK;
    std::string error;
    uint32_t failed_request = MP_NO_REQUEST;
    uint64_t failed_tag = 0;
    uint32_t failed_count = 0;
  };

  static mp_status status_named(const std::string& name) {
    if (name == "device") return MP_ERR_DEVICE;
    if (name == "internal") return MP_ERR_INTERNAL;
    return MP_ERR_IO;
  }

  bool should_fault(const mp_read_request& r) const {
    if (fail_times_ > 0 && injected_ >= fail_times_) return false;
    if (prefetch_only_ && r.priority != MP_READ_PREFETCH) return false;
    if (fail_every_ > 0 && seen_ % uint64_t(fail_every_) == 0) return true;
    return fail_offset_ >= 0 && uint64_t(fail_offset_) >= r.offset && uint64_t(fail_offset_) < r.offset + r.length;
  }

  // Device destinations are staged in pinned memory from the host (transport.h): a pageable
  // source would make the copy synchronous on a GPU.
  unsigned char* pinned_bounce(uint64_t bytes) {
    if (bytes <= bounce_bytes_) return bounce_;
    const mp_device_service* dev = host_->device;
    if (bounce_ != nullptr) dev->free_pinned(dev->ctx, bounce_);
    bounce_ = nullptr;
    bounce_bytes_ = 0;
    void* p = nullptr;
    if (dev->alloc_pinned(dev->ctx, bytes, &p) != MP_OK || p == nullptr)
      throw mp::Error(MP_ERR_OOM, mp::format("fault-inject: cannot allocate {} bytes of pinned memory", bytes));
    bounce_ = static_cast<unsigned char*>(p);
    bounce_bytes_ = bytes;
    return bounce_;
  }

  mp_status read_one(const mp_read_request& r, const OpenFile& f, Result& result) {
    unsigned char* dst = static_cast<unsigned char*>(r.dst) + r.dst_offset;
    const bool to_device = r.dst_kind == MP_MEM_DEVICE;
    unsigned char* into = to_device ? pinned_bounce(r.length) : dst;
    uint64_t want = r.length;
    std::string fault;
    if (should_fault(r)) {
      ++injected_;
      want = short_reads_ ? r.length / 2 : 0;
      fault = short_reads_ ? "injected short read" : "injected EIO";
    }
    moepage::fileio::RangeRead rr = read_range("fault-inject", f.fd, f.path, r.offset, want, into);
    stats_.bytes_read += rr.bytes_read;
    if (rr.status == MP_OK && to_device && rr.bytes_read > 0) {
      // On a stream of its own: the compute stream may be waiting on the device for this read (an
      // architecture's slot lookup, arch option slot_table), and a copy queued behind it never runs.
      const mp_device_service* dev = host_->device;
      if (copy_stream_ == nullptr &&
          (dev->stream_create == nullptr || dev->stream_create(dev->ctx, &copy_stream_) != MP_OK))
        copy_stream_ = nullptr;
      if (copy_stream_ == nullptr ||
          dev->copy_to_device_async(dev->ctx, dst, into, rr.bytes_read, copy_stream_) != MP_OK ||
          dev->stream_synchronize(dev->ctx, copy_stream_) != MP_OK)
        rr = {MP_ERR_DEVICE, rr.bytes_read, "fault-inject: " + f.path + ": device copy failed"};
    }
    if (rr.status == MP_OK && !fault.empty())
      rr = {fail_status_, want,
            mp::format("fault-inject: {}: read error at offset {} (wanted {} bytes, got {}): {}", f.path, r.offset,
                       r.length, want, fault)};
    if (rr.status != MP_OK && result.status == MP_OK) {
      result.status = rr.status;
      result.error = rr.message;
    }
    return rr.status;
  }

  // Reads finished in submit(), so a ticket is reported (and retired) by whoever asks first.
  mp_status finish(mp_ticket ticket, mp_ticket_result* out) {
    std::lock_guard lock(mutex_);
    const auto it = results_.find(ticket);
    if (it == results_.end())
      throw mp::Error(MP_ERR_INVALID_ARG, mp::format("fault-inject: unknown or already retired ticket {}", ticket));
    const Result r = std::move(it->second);
    results_.erase(it);
    out->failed_request = r.failed_request;
    out->failed_tag = r.failed_tag;
    out->failed_count = r.failed_count;
    if (r.status != MP_OK) throw mp::Error(r.status, r.error);
    return MP_OK;
  }

  const mp_host_api* host_;
  const int64_t fail_every_, fail_offset_, fail_times_;
  const bool short_reads_;
  const int64_t delay_us_;
  const bool prefetch_only_;
  const mp_status fail_status_;
  FileTable files_{"fault-inject"};
  std::mutex mutex_;
  uint64_t seen_ = 0;
  int64_t injected_ = 0;
  mp_ticket next_ticket_ = 1;
  std::unordered_map<mp_ticket, Result> results_;
  unsigned char* bounce_ = nullptr;  // pinned, for device destinations
  mp_stream copy_stream_ = nullptr;  // the bounce's copies, made at the first one
  uint64_t bounce_bytes_ = 0;
  mp_transport_stats stats_{sizeof(mp_transport_stats), 0, 0, 0, 0, 0, 0};
};

}  // namespace

MOEPAGE_PLUGIN("fault-inject", "0.1.0",
               mp::make_transport_descriptor<FaultInjectTransport>(
                   "fault-inject", "0.1.0", "FOR TESTS ONLY: real reads with injected EIO, short reads and delays",
                   MP_CAP_CPU | MP_CAP_GPU, kOptions))
