#include "parallel/local_group.hpp"

#include <algorithm>
#include <stdexcept>

namespace moepage::parallel {

struct LocalGroup::Rank {
  LocalGroup* group = nullptr;
  uint32_t r = 0;
  mp_collective abi{};
};

namespace {
thread_local std::string t_last_error;  // last_error is per thread, like the plugins'

// An entry of the C table: what `body` throws becomes a status, its message the last error.
template <class Body>
mp_status guarded(Body&& body) noexcept {
  try {
    body();
    return MP_OK;
  } catch (const std::invalid_argument& e) {
    t_last_error = e.what();
    return MP_ERR_INVALID_ARG;
  } catch (const std::exception& e) {
    t_last_error = e.what();
    return MP_ERR_INTERNAL;
  }
}
}  // namespace

LocalGroup::LocalGroup(uint32_t ranks) : ranks_(ranks), published_(ranks, nullptr), lengths_(ranks, 0) {
  if (ranks == 0) throw std::invalid_argument("local rank group: 0 ranks");
  for (uint32_t r = 0; r < ranks; ++r) {
    auto v = std::make_unique<Rank>();
    v->group = this;
    v->r = r;
    v->abi = mp_collective{sizeof(mp_collective), r,      ranks, v.get(), &reduce_entry, &abort_entry,
                           &last_error_entry,     nullptr};
    views_.push_back(std::move(v));
  }
}

LocalGroup::~LocalGroup() = default;

const mp_collective& LocalGroup::rank(uint32_t r) const {
  if (r >= ranks_)
    throw std::out_of_range("local rank group: rank " + std::to_string(r) + " of " + std::to_string(ranks_));
  return views_[r]->abi;
}

void LocalGroup::attach_device(DeviceCollective* device) {
  device_ = device;
  for (auto& v : views_) v->abi.all_reduce_sum_f32_device = device ? &device_reduce_entry : nullptr;
}

mp_status LocalGroup::device_reduce_entry(void* ctx, float* data, uint64_t n, mp_stream stream) {
  auto* v = static_cast<Rank*>(ctx);
  return guarded([&] {
    if (data == nullptr && n > 0) throw std::invalid_argument("all_reduce_sum_f32_device: data is NULL");
    if (v->group->aborted()) throw std::runtime_error(v->group->abort_reason());
    v->group->device_->all_reduce_sum(v->r, data, n, stream);
  });
}

mp_status LocalGroup::reduce_entry(void* ctx, float* data, uint64_t n) {
  auto* v = static_cast<Rank*>(ctx);
  return guarded([&] {
    if (data == nullptr && n > 0) throw std::invalid_argument("all_reduce_sum_f32: data is NULL");
    v->group->reduce(v->r, data, n);
  });
}

void LocalGroup::abort_entry(void* ctx, const char* why) {
  auto* v = static_cast<Rank*>(ctx);
  v->group->abort("rank " + std::to_string(v->r) + " failed: " + (why != nullptr ? why : "no reason given"));
}

const char* LocalGroup::last_error_entry(void*) { return t_last_error.c_str(); }

bool LocalGroup::barrier() {
  std::unique_lock<std::mutex> lock(mu_);
  if (aborted_) return false;
  const uint64_t gen = generation_;
  if (++arrived_ == ranks_) {
    arrived_ = 0;
    ++generation_;
    cv_.notify_all();
    return true;
  }
  cv_.wait(lock, [&] { return generation_ != gen || aborted_; });
  return generation_ != gen;  // false: woken by an abort, not by the last rank
}

void LocalGroup::reduce(uint32_t r, float* data, uint64_t n) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    published_[r] = data;
    lengths_[r] = n;
  }
  if (!barrier()) throw std::runtime_error(abort_reason());
  // Every rank checks every length before any rank reads another's buffer, so all of them fail.
  for (uint32_t q = 1; q < ranks_; ++q)
    if (lengths_[q] != lengths_[0]) {
      const std::string why = "all_reduce_sum_f32: rank " + std::to_string(q) + " reduces " +
                              std::to_string(lengths_[q]) + " floats, rank 0 " + std::to_string(lengths_[0]);
      abort(why);
      throw std::invalid_argument(why);
    }
  const auto slice = [&](uint32_t q) { return std::pair<uint64_t, uint64_t>{n * q / ranks_, n * (q + 1) / ranks_}; };
  const auto [lo, hi] = slice(r);
  for (uint64_t i = lo; i < hi; ++i) {
    float sum = published_[0][i];
    for (uint32_t q = 1; q < ranks_; ++q) sum += published_[q][i];
    data[i] = sum;  // only this rank reads or writes slice r of its own buffer now
  }
  if (!barrier()) throw std::runtime_error(abort_reason());
  for (uint32_t q = 0; q < ranks_; ++q) {
    if (q == r) continue;
    const auto [a, b] = slice(q);
    std::copy(published_[q] + a, published_[q] + b, data + a);
  }
  if (!barrier()) throw std::runtime_error(abort_reason());  // nobody still reads this buffer
}

void LocalGroup::abort(const std::string& why) {
  bool first = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    first = !aborted_;
    if (first) why_ = why;
    aborted_ = true;
    cv_.notify_all();
  }
  // Outside the lock: aborting a library's communicators may take a while.
  if (first && device_) device_->abort();
}

bool LocalGroup::aborted() const {
  std::lock_guard<std::mutex> lock(mu_);
  return aborted_;
}

std::string LocalGroup::abort_reason() const {
  std::lock_guard<std::mutex> lock(mu_);
  return why_;
}

}  // namespace moepage::parallel
