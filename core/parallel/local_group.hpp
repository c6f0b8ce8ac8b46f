// The host's collective for ranks that are threads of one process (`moepage run` with
// parallel.ranks > 1 on the CPU): rank(r) is the mp_collective (ABI 1.7) handed to rank r's
// architecture. Threads of one address space need no rendezvous (no addresses, ports or unique
// ids to exchange): the ranks read each other's buffers directly. A library collective (NCCL,
// RCCL) would fill the same mp_collective table, loaded at run time, and nothing above changes.
//
// all_reduce_sum_f32 allocates nothing: each rank sums one slice of the vector over every rank's
// buffer, in rank order, writing the slice into its own buffer (no other rank reads that slice of
// it), then every rank copies the other slices from their owners. Three barriers per call; every
// rank ends with the same bits, and the same bits as a sum in rank order over whole vectors.
//
// GPU ranks may also reduce in device memory through an attached DeviceCollective (NCCL): abort
// then also aborts the library's communicators, so no rank waits on the device for a failed one.
#pragma once
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "moepage/moepage.h"
#include "parallel/device_collective.hpp"

namespace moepage::parallel {

class LocalGroup {
 public:
  explicit LocalGroup(uint32_t ranks);  // throws std::invalid_argument for 0 ranks
  ~LocalGroup();
  LocalGroup(const LocalGroup&) = delete;
  LocalGroup& operator=(const LocalGroup&) = delete;

  uint32_t size() const { return ranks_; }
  // Valid while the group lives.
  const mp_collective& rank(uint32_t r) const;
  // Gives every rank's table all_reduce_sum_f32_device over `device` (ABI 1.9), before any table
  // is handed out; `device` must outlive the group. Without one the field stays NULL.
  void attach_device(DeviceCollective* device);
  // Fails every rank's pending and later calls with `why` (the first reason wins).
  void abort(const std::string& why);
  bool aborted() const;
  std::string abort_reason() const;

 private:
  struct Rank;
  static mp_status reduce_entry(void* ctx, float* data, uint64_t n);
  static void abort_entry(void* ctx, const char* why);
  static const char* last_error_entry(void* ctx);
  static mp_status device_reduce_entry(void* ctx, float* data, uint64_t n, mp_stream stream);
  // Waits until every rank arrived (generation counting); false once aborted.
  bool barrier();
  void reduce(uint32_t r, float* data, uint64_t n);

  uint32_t ranks_;
  DeviceCollective* device_ = nullptr;
  std::vector<std::unique_ptr<Rank>> views_;
  std::vector<float*> published_;
  std::vector<uint64_t> lengths_;  // each rank's length of the reduce in flight
  mutable std::mutex mu_;
  std::condition_variable cv_;
  uint32_t arrived_ = 0;
  uint64_t generation_ = 0;
  bool aborted_ = false;
  std::string why_;
};

}  // namespace moepage::parallel
