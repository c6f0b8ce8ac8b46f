// A stand-in for NCCL's C library, for NcclCollective's tests on the CPU: the same six names, with
// "devices" in host memory. ncclAllReduce sums float32 buffers of the communicators of one
// ncclCommInitAll in rank order (every caller waits for the others), ignoring the stream; a
// communicator made over device 99 fails to initialise, and ncclCommAbort wakes waiting callers.
#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

namespace {

struct Clique {
  int ranks = 0;
  std::mutex mu;
  std::condition_variable cv;
  std::vector<float*> buffers;
  int arrived = 0, left = 0;
  long generation = 0;
  bool aborted = false;
  int comms_alive = 0;
};

struct Comm {
  std::shared_ptr<Clique> clique;
  int rank = 0;
};

// Waits until every rank arrived (generation counting); false once aborted.
bool barrier(Clique& c, std::unique_lock<std::mutex>& lock) {
  const long gen = c.generation;
  if (++c.arrived == c.ranks) {
    c.arrived = 0;
    ++c.generation;
    c.cv.notify_all();
    return true;
  }
  c.cv.wait(lock, [&] { return c.generation != gen || c.aborted; });
  return c.generation != gen;
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) int ncclGetVersion(int* version) {
  *version = 22703;  // 2.27.3
  return 0;
}

__attribute__((visibility("default"))) const char* ncclGetErrorString(int result) {
  return result == 0 ? "no error" : result == 4 ? "invalid argument (fake)" : "internal error (fake)";
}

__attribute__((visibility("default"))) int ncclCommInitAll(void** comms, int ndev, const int* devlist) {
  for (int i = 0; i < ndev; ++i)
    if (devlist[i] == 99) return 4;
  auto clique = std::make_shared<Clique>();
  clique->ranks = ndev;
  clique->buffers.assign(size_t(ndev), nullptr);
  clique->comms_alive = ndev;
  for (int i = 0; i < ndev; ++i) comms[i] = new Comm{clique, i};
  return 0;
}

__attribute__((visibility("default"))) int ncclAllReduce(const void* send, void* recv, size_t count, int datatype,
                                                         int op, void* comm, void* /*stream*/) {
  if (datatype != 7 || op != 0 || send != recv || comm == nullptr) return 4;
  Comm& self = *static_cast<Comm*>(comm);
  Clique& c = *self.clique;
  std::unique_lock<std::mutex> lock(c.mu);
  if (c.aborted) return 5;
  c.buffers[size_t(self.rank)] = static_cast<float*>(recv);
  if (!barrier(c, lock)) return 5;
  std::vector<float> sum(count, 0.0f);
  for (size_t i = 0; i < count; ++i) {
    float s = c.buffers[0][i];
    for (int q = 1; q < c.ranks; ++q) s += c.buffers[size_t(q)][i];
    sum[i] = s;
  }
  if (!barrier(c, lock)) return 5;  // every rank read every buffer
  for (size_t i = 0; i < count; ++i) static_cast<float*>(recv)[i] = sum[i];
  return 0;
}

__attribute__((visibility("default"))) int ncclCommDestroy(void* comm) {
  delete static_cast<Comm*>(comm);
  return 0;
}

// Wakes the callers waiting in a sum. The communicator is kept until the library unloads, not
// freed: a caller woken here may still be reading it (the real library manages that itself).
__attribute__((visibility("default"))) int ncclCommAbort(void* comm) {
  Comm* self = static_cast<Comm*>(comm);
  {
    std::lock_guard<std::mutex> lock(self->clique->mu);
    self->clique->aborted = true;
    self->clique->cv.notify_all();
  }
  static std::mutex graveyard_mu;
  static std::vector<std::unique_ptr<Comm>> graveyard;
  std::lock_guard<std::mutex> lock(graveyard_mu);
  graveyard.emplace_back(self);
  return 0;
}

}  // extern "C"
