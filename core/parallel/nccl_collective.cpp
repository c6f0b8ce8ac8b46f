#include "parallel/nccl_collective.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <mutex>
#include <stdexcept>

namespace moepage::parallel {
namespace {

// The few names of NCCL's C API this file calls, declared here so the build needs no NCCL
// headers. The values are the library's documented ABI (nccl.h: ncclSuccess 0, ncclFloat32 7,
// ncclSum 0), which RCCL shares.
using NcclResult = int;
using NcclComm = void*;
constexpr NcclResult kNcclSuccess = 0;
constexpr int kNcclFloat32 = 7;
constexpr int kNcclSum = 0;

using CommInitAllFn = NcclResult (*)(NcclComm* comms, int ndev, const int* devlist);
using AllReduceFn = NcclResult (*)(const void* send, void* recv, size_t count, int datatype, int op, NcclComm comm,
                                   void* stream);
using CommDestroyFn = NcclResult (*)(NcclComm comm);
using CommAbortFn = NcclResult (*)(NcclComm comm);
using ErrorStringFn = const char* (*)(NcclResult result);
using GetVersionFn = NcclResult (*)(int* version);

}  // namespace

struct NcclCollective::Library {
  std::string name;
  void* handle = nullptr;
  CommInitAllFn comm_init_all = nullptr;
  AllReduceFn all_reduce = nullptr;
  CommDestroyFn comm_destroy = nullptr;
  CommAbortFn comm_abort = nullptr;
  ErrorStringFn error_string = nullptr;
  GetVersionFn get_version = nullptr;

  explicit Library(std::string library) : name(std::move(library)) {
    handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* why = dlerror();
      throw std::runtime_error("collective library '" + name + "' cannot be loaded: " + (why ? why : "dlopen failed"));
    }
    comm_init_all = symbol<CommInitAllFn>("ncclCommInitAll");
    all_reduce = symbol<AllReduceFn>("ncclAllReduce");
    comm_destroy = symbol<CommDestroyFn>("ncclCommDestroy");
    comm_abort = symbol<CommAbortFn>("ncclCommAbort");
    error_string = symbol<ErrorStringFn>("ncclGetErrorString");
    get_version = symbol<GetVersionFn>("ncclGetVersion");
  }
  ~Library() {
    if (handle) dlclose(handle);
  }
  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;

  template <class Fn>
  Fn symbol(const char* what) {
    void* p = dlsym(handle, what);
    if (p == nullptr) {
      dlclose(handle);
      handle = nullptr;
      throw std::runtime_error("collective library '" + name + "' has no " + what);
    }
    return reinterpret_cast<Fn>(p);
  }

  std::string failure(const std::string& call, NcclResult r) const {
    const char* text = error_string ? error_string(r) : nullptr;
    return "collective library '" + name + "': " + call + " failed: " + (text ? text : "error " + std::to_string(r));
  }
};

NcclCollective::NcclCollective(const std::string& library, std::vector<int> devices) : devices_(std::move(devices)) {
  if (devices_.empty()) throw std::runtime_error("collective library '" + library + "': no ranks");
  for (size_t a = 0; a < devices_.size(); ++a)
    for (size_t b = a + 1; b < devices_.size(); ++b)
      if (devices_[a] == devices_[b])
        throw std::runtime_error("collective library '" + library + "' needs a GPU per rank, but ranks " +
                                 std::to_string(a) + " and " + std::to_string(b) + " share device " +
                                 std::to_string(devices_[a]));
  lib_ = std::make_unique<Library>(library);
  if (NcclResult r = lib_->get_version(&version_); r != kNcclSuccess)
    throw std::runtime_error(lib_->failure("ncclGetVersion", r));
  comms_.assign(devices_.size(), nullptr);
  if (NcclResult r = lib_->comm_init_all(comms_.data(), int(devices_.size()), devices_.data()); r != kNcclSuccess) {
    comms_.clear();
    throw std::runtime_error(lib_->failure("ncclCommInitAll over " + std::to_string(devices_.size()) + " devices", r));
  }
}

NcclCollective::~NcclCollective() {
  if (aborted_.load()) return;  // abort() released them
  for (void* c : comms_) (void)lib_->comm_destroy(c);
}

void NcclCollective::all_reduce_sum(uint32_t rank, float* data, uint64_t n, mp_stream stream) {
  if (rank >= comms_.size())
    throw std::runtime_error("collective library '" + lib_->name + "': rank " + std::to_string(rank) + " of " +
                             std::to_string(comms_.size()));
  const std::shared_lock lock(mu_);
  if (aborted_.load()) throw std::runtime_error("collective library '" + lib_->name + "': the group aborted");
  if (n == 0) return;
  // In place: NCCL reads and writes the same buffer.
  if (NcclResult r = lib_->all_reduce(data, data, size_t(n), kNcclFloat32, kNcclSum, comms_[rank], stream);
      r != kNcclSuccess)
    throw std::runtime_error(lib_->failure("ncclAllReduce on rank " + std::to_string(rank), r));
}

void NcclCollective::abort() noexcept {
  // Aborting the communicators ends operations still waiting on the device for a peer, and frees
  // them: the ranks' later calls fail instead.
  if (aborted_.exchange(true)) return;
  std::unique_lock lock(mu_, std::defer_lock);
  (void)lock.try_lock_for(std::chrono::seconds(1));
  for (void* c : comms_) (void)lib_->comm_abort(c);
}

std::string NcclCollective::describe() const {
  const int v = version_;
  // NCCL 2.9 and later encode the version as major * 10000 + minor * 100 + patch.
  std::string text = lib_->name + " " + std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." +
                     std::to_string(v % 100) + " over devices ";
  for (size_t r = 0; r < devices_.size(); ++r) {
    if (r > 0) text += ',';
    text += std::to_string(devices_[r]);
  }
  return text;
}

std::string default_collective_library(bool amd) { return amd ? "librccl.so.1" : "libnccl.so.2"; }

}  // namespace moepage::parallel
