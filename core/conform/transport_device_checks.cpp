// Transport checks of the device path (transport.h): device destinations through the host's
// device service, copied from pinned memory, complete when wait() returns; what MP_CAP_GPU
// promises. Run on a CheckingDevice, whose CPU copies happen only at a synchronisation, as a
// GPU's would.
#include "conform/checking_device.hpp"
#include "conform/transport_fixture.hpp"

namespace moepage::conform {
namespace {

// Device memory from the host, freed on every path out.
class DeviceBuffer {
 public:
  DeviceBuffer(const mp_device_service* dev, uint64_t bytes) : dev_(dev) {
    expect(dev != nullptr && dev->alloc_device(dev->ctx, bytes, &ptr_) == MP_OK && ptr_ != nullptr,
           "the host cannot allocate device memory");
  }
  ~DeviceBuffer() { dev_->free_device(dev_->ctx, ptr_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* get() const { return ptr_; }

 private:
  const mp_device_service* dev_;
  void* ptr_ = nullptr;
};

constexpr uint64_t kDeviceOffset = 12345;
constexpr uint64_t kDeviceBytes = 300000;

// Submits one device read; returns false when the transport refused it as unsupported.
bool submit_device_read(TransportContext& ctx, mp::TransportHandle& t, uint32_t f, void* device, mp_ticket& ticket) {
  const mp_read_request r = read_request(f, kDeviceOffset, kDeviceBytes, device, 0, MP_MEM_DEVICE, MP_READ_DEMAND, 1);
  const mp_status s = ctx.vtable().submit(t.ref().self, &r, 1, &ticket);
  if (s == MP_ERR_UNSUPPORTED) return false;
  expect(s == MP_OK, "submit to a device destination failed (" + std::string(mp_status_name(s)) +
                         "): " + ctx.vtable().last_error(t.ref().self));
  return true;
}

void device_reads(TransportContext& ctx) {
  CheckingDevice checking(ctx.host);
  const mp_device_service* dev = checking.host()->device;
  uint32_t f = 0;
  mp::TransportHandle t = ctx.make_open(f, checking.host());
  DeviceBuffer device(dev, kDeviceBytes);
  mp_ticket ticket = 0;
  if (!submit_device_read(ctx, t, f, device.get(), ticket)) {
    expect((ctx.capabilities() & MP_CAP_GPU) == 0 || ctx.component.abi_minor < 4,
           "the transport declares MP_CAP_GPU but refused a device destination as unsupported");
    return;
  }
  t.wait(ticket);
  // copy_to_host runs nothing still queued: bytes a transport did not synchronise are missing.
  std::vector<uint8_t> back(kDeviceBytes);
  expect(dev->copy_to_host(dev->ctx, back.data(), device.get(), kDeviceBytes) == MP_OK,
         "copying back from the device failed");
  const int64_t bad = ctx.file.first_mismatch(kDeviceOffset, back.data(), kDeviceBytes);
  expect(bad < 0, "after wait() returned, device bytes differ from the file first at byte " + std::to_string(bad) +
                      " (wait must cover the ticket's device copies)");
  const std::vector<std::string> unpinned = checking.unpinned_copies();
  expect(unpinned.empty(),
         "device copies must come from alloc_pinned memory: " + (unpinned.empty() ? std::string() : unpinned.front()));
}

}  // namespace

std::vector<TransportCheck> transport_device_checks() {
  return {
      {"device destinations are byte-exact when wait returns, copied from pinned memory (or refused as unsupported "
       "without MP_CAP_GPU)",
       &device_reads},
  };
}

}  // namespace moepage::conform
