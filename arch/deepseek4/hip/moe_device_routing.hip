// Decode routed on the device (moe.hpp, moe_device_routing.hpp): the host's side of it. Whether a
// layer's slots never move (asked of the expert source once, then the whole pointer-table row
// uploaded), the shape the kernel variant needs without the ids, and after the step the ids'
// copy to the host and their report to the source.
#include "deepseek4/hip/moe_device_routing.hpp"

#include <algorithm>
#include <string>

#include "deepseek4/hip/check.hpp"
#include "deepseek4/hip/moe.hpp"
#include "deepseek4/hip/moe_route.hpp"
#include "deepseek4/hip/moe_scratch.hpp"
#include "deepseek4/hip/ops.hpp"

namespace moepage::ds4::gpu {

// The distinct experts among one token's k ids and the most pairs one of them serves.
void token_shape(const int32_t* ids, int64_t k, int32_t& n_used, int32_t& max_count) {
  n_used = 0;
  max_count = 0;
  for (int64_t j = 0; j < k; ++j) {
    int32_t same = 0;
    bool first = true;
    for (int64_t i = 0; i < k; ++i) {
      same += ids[i] == ids[j] ? 1 : 0;
      if (i < j && ids[i] == ids[j]) first = false;
    }
    n_used += first ? 1 : 0;
    max_count = std::max(max_count, same);
  }
}

// Whether `layer`'s slots never move, asked of the source once (then the whole table row is
// uploaded): only then may the layer be routed on the device.
bool layer_has_fixed_slots(MoeScratch& sc, GpuExpertSource& source, uint32_t layer, int64_t E, hipStream_t st) {
  int8_t& known = sc.fixed_table[layer];
  if (known != 0) return known > 0;
  const std::byte** mirror = sc.mirror + int64_t(layer) * E;
  // The previous copies out of this layer's pinned memory must be done before it is rewritten.
  MP_GPU_CHECK(hipEventSynchronize(static_cast<hipEvent_t>(sc.layer_copied[layer])));
  known = -1;
  if (!source.fixed_slots(layer, mirror, uint32_t(E))) return false;
  for (int64_t e = 0; e < E; ++e)
    if (mirror[e] == nullptr || reinterpret_cast<uintptr_t>(mirror[e]) % 16 != 0) return false;
  MP_GPU_CHECK(hipMemcpyAsync(sc.table + int64_t(layer) * E, mirror, size_t(E) * sizeof(const std::byte*),
                              hipMemcpyHostToDevice, st));
  MP_GPU_CHECK(hipEventRecord(static_cast<hipEvent_t>(sc.layer_copied[layer]), st));
  known = 1;
  return true;
}

namespace {

bool any_device_routed(const MoeScratch& sc) {
  return std::find(sc.routed_on_device.begin(), sc.routed_on_device.end(), uint8_t{1}) != sc.routed_on_device.end();
}

}  // namespace

void fetch_device_routing(MoeScratch& sc, Stream stream) {
  if (any_device_routed(sc))
    download_async(sc.routed_ids_host, sc.routed_ids, uint64_t(sc.n_layers) * (sc.top_k + 1) * sizeof(int32_t), stream);
}

void account_device_routing(MoeScratch& sc, GpuExpertSource& source) {
  if (!any_device_routed(sc)) return;
  const uint32_t k = sc.top_k;
  int32_t distinct[kMaxDeviceTopK];
  for (uint32_t layer = 0; layer < sc.n_layers; ++layer) {
    if (!sc.routed_on_device[layer]) continue;
    sc.routed_on_device[layer] = 0;
    const int32_t* ids = sc.routed_ids_host + int64_t(layer) * (k + 1);
    if (ids[k] != 0) {
      clear_device_routing(sc);
      throw GpuError("gpu moe layer " + std::to_string(layer) + ": the router's ids (" + std::to_string(ids[0]) +
                     ", ...) are not the " + std::to_string(k) + " in-range experts the layer's shape expected");
    }
    std::copy_n(ids, k, distinct);
    std::sort(distinct, distinct + k);
    const uint32_t n = uint32_t(std::unique(distinct, distinct + k) - distinct);
    source.account(layer, distinct, n);
  }
}

void clear_device_routing(MoeScratch& sc) { std::fill(sc.routed_on_device.begin(), sc.routed_on_device.end(), 0); }

}  // namespace moepage::ds4::gpu
