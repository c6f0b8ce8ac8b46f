#include "mapped_files.hpp"

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "moepage/cpp/plugin_adapter.hpp"

namespace moepage::transport {

MappedFiles::MappedFiles(const mp_device_service* device, uint64_t max_locked)
    : device_(device), max_locked_(max_locked) {}

MappedFiles::~MappedFiles() {
  for (const MappedFile& f : files_) {
    if (f.registered) device_->unregister_host(device_->ctx, const_cast<unsigned char*>(f.bytes));
    if (f.bytes != nullptr) ::munmap(const_cast<unsigned char*>(f.bytes), f.mapped);
  }
}

uint32_t MappedFiles::open(const char* path) {
  const uint32_t handle = table_.open(path);  // names the file when it cannot be opened
  std::lock_guard lock(mutex_);
  if (handle < files_.size() && files_[handle].file != nullptr) return handle;  // opened before: same mapping
  const OpenFile* file = table_.find(handle);
  struct stat st {};
  if (::fstat(file->fd, &st) != 0) {
    const int err = errno;
    throw mp::Error(MP_ERR_IO, mp::format("mapped: cannot stat {}: {}", file->path, std::strerror(err)));
  }
  MappedFile m;
  m.file = file;
  m.size = uint64_t(st.st_size);
  const uint64_t page = uint64_t(::sysconf(_SC_PAGESIZE));
  m.mapped = (m.size + page - 1) / page * page;
  if (device_ != nullptr && locked_ + m.mapped > max_locked_)
    throw mp::Error(MP_ERR_OOM, mp::format("mapped: {}: registering its {} bytes would lock {} bytes of host memory, "
                                           "more than max_locked ({} bytes); raise it, or use pinned-async",
                                           file->path, m.mapped, locked_ + m.mapped, max_locked_));
  // Only a device copies from the mapping; on the CPU device every read is a pread, so nothing is mapped.
  if (m.size > 0 && device_ != nullptr) {
    void* p = ::mmap(nullptr, m.mapped, PROT_READ, MAP_SHARED, file->fd, 0);
    if (p == MAP_FAILED) {
      const int err = errno;
      throw mp::Error(MP_ERR_IO,
                      mp::format("mapped: cannot map {} ({} bytes): {}", file->path, m.size, std::strerror(err)));
    }
    m.bytes = static_cast<const unsigned char*>(p);
    if (const mp_status s = device_->register_host(device_->ctx, p, m.mapped); s != MP_OK) {
      ::munmap(p, m.mapped);
      throw mp::Error(s, mp::format("mapped: {}: the device refused to register its {}-byte mapping ({}); use "
                                    "pinned-async",
                                    file->path, m.mapped, mp_status_name(s)));
    }
    m.registered = true;
    locked_ += m.mapped;
  }
  // Indexed by the table's handle (a file whose mapping failed keeps its handle, unmapped; its
  // next open maps it again). Growing a deque at its end never moves an entry.
  if (files_.size() <= handle) files_.resize(size_t(handle) + 1);
  files_[handle] = m;
  return handle;
}

const MappedFile* MappedFiles::find(uint32_t handle) const {
  std::lock_guard lock(mutex_);
  return handle < files_.size() && files_[handle].file != nullptr ? &files_[handle] : nullptr;
}

}  // namespace moepage::transport
