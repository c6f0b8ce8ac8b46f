// Every kernel launch of the GPU forward pass goes through launch(): it launches, names the launch
// in the error it throws, and applies the launch mode of the forward pass this host thread is
// issuing. For .hip files only.
//
// Overlapped launches (NVIDIA sm_90 and newer; arch option overlap_launches): a kernel may start
// while the previous kernel of its stream finishes, its blocks resident and waiting on the device
// for their inputs. A decode step's layer is a chain of fourteen short kernels; plainly launched,
// each pays the launch and its blocks' start after the previous one drains (H200: decode 9-12%
// faster overlapped). The contract every kernel of this plugin keeps: its first statement is
// kernel_entry(), so nothing it reads or writes is touched before the previous grid has finished;
// the device wait is a no-op on a plain launch, which is why the mode can change per forward pass.
// (Pulling the weights into L2 before the wait was tried: 6% slower, the prefetch competing with the
// running kernel's own reads. Loading only each block's first step of weights into registers before
// the wait was no faster: 12 layers 0.9-2.0% slower on the H100, 2026-12-06-decode-joins.md.
// Releasing the next grid only as a kernel's blocks exit, so a side stream's kernel gets the room
// instead, and letting a kernel's blocks wait on counters for the part of the previous grid they
// need instead of all of it, were 0-1% and 6-8% slower: 2026-12-06-side-joins.md.)
#pragma once
#include <string>
#include <utility>

#include "deepseek4/hip/check.hpp"
#include "deepseek4/hip/launch_mode.hpp"

namespace moepage::ds4::gpu {

template <class... Params, class... Args>
void launch(const char* what, void (*kernel)(Params...), dim3 grid, dim3 block, size_t shared_bytes, hipStream_t stream,
            Args&&... args) {
  const hipError_t e =
      mp_launch_kernel(kernel, grid, block, shared_bytes, stream, overlap_launches_now(), std::forward<Args>(args)...);
  if (e != hipSuccess) throw GpuError(std::string(what) + ": kernel launch failed: " + hipGetErrorString(e));
}

// The first statement of every kernel: wait for the previous grid of the stream (a no-op unless
// the launch overlapped), then let the next grid's blocks start as this grid's last ones run.
__device__ inline void kernel_entry() {
  mp_await_prior_grid();
  mp_release_next_grid();
}

}  // namespace moepage::ds4::gpu
