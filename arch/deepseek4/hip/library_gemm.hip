// The dense products on the vendor's BLAS (library_gemm.hpp): dequantize, round x into parts,
// multiply with cuBLAS (bf16 operands, float sums, float output).
#include "deepseek4/hip/library_gemm.hpp"

#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <utility>

#include "deepseek4/hip/check.hpp"
#include "deepseek4/hip/gemm_policy.hpp"
#include "deepseek4/hip/launch.hpp"
#include "deepseek4/hip/library_weight_cache.hpp"
#include "deepseek4/hip/mma_tile_staged.hpp"

#if defined(MOEPAGE_GPU_NVIDIA)
#include <cublas_v2.h>
#endif

namespace moepage::ds4::gpu {
namespace {

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

#if defined(MOEPAGE_GPU_NVIDIA)
constexpr int kThreads = 256;

unsigned blocks_of(int64_t items) { return unsigned((items + kThreads - 1) / kThreads); }

// One thread per stored 16-byte chunk: W's rows as bf16 [rows, cols], row-major.
template <WeightCode W>
__global__ void __launch_bounds__(kThreads) dequantize_kernel(DeviceMat m, uint16_t* out) {
  kernel_entry();
  constexpr int kElems = elems_per_chunk<W>();
  const int64_t per_row = m.cols / kElems;
  const int64_t i = int64_t(blockIdx.x) * kThreads + threadIdx.x;
  if (i >= m.rows * per_row) return;
  const int64_t r = i / per_row, chunk = i % per_row, stored = m.row_offset + r;
  const uint4 q = reinterpret_cast<const uint4*>(m.data + stored * row_bytes<W>(m.cols))[chunk];
  const uint8_t* scale = has_block_scale<W>() ? m.scale + scale_row_offset<W>(stored, m.cols) : nullptr;
  chunk_to_bf16<W>(q, scale, chunk, reinterpret_cast<uint4*>(out + r * m.cols + chunk * kElems));
}

// One thread per 4 columns of a token's group: x rounded to bf16 into hi, and (split) what the
// rounding left, rounded, into lo; both [groups, n_tokens, cols].
__global__ void __launch_bounds__(kThreads)
    split_x_kernel(const float* x, int64_t ld_x, int64_t x_group_stride, int64_t groups, int64_t n_tokens, int64_t cols,
                   uint16_t* hi, uint16_t* lo) {
  kernel_entry();
  const int64_t i = int64_t(blockIdx.x) * kThreads + threadIdx.x;
  const int64_t per_token = cols / 4;
  if (i >= groups * n_tokens * per_token) return;
  const int64_t c = (i % per_token) * 4, gt = i / per_token, t = gt % n_tokens, g = gt / n_tokens;
  const float4 v = *reinterpret_cast<const float4*>(x + g * x_group_stride + t * ld_x + c);
  const uint32_t h01 = mma::pack_bf16x2(v.x, v.y), h23 = mma::pack_bf16x2(v.z, v.w);
  const int64_t at = gt * cols + c;
  *reinterpret_cast<uint2*>(hi + at) = make_uint2(h01, h23);
  if (lo) {
    const float r0 = v.x - __uint_as_float(h01 << 16), r1 = v.y - __uint_as_float(h01 & 0xFFFF0000u);
    const float r2 = v.z - __uint_as_float(h23 << 16), r3 = v.w - __uint_as_float(h23 & 0xFFFF0000u);
    *reinterpret_cast<uint2*>(lo + at) = make_uint2(mma::pack_bf16x2(r0, r1), mma::pack_bf16x2(r2, r3));
  }
}

void check_blas(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw GpuError(std::string("gpu matmul (cuBLAS): ") + what + " failed: " + cublasGetStatusString(s));
}

// One cuBLAS handle and one memory pool per device. The pool keeps what it was given (release
// threshold: never) so a prompt's products do not go back to the driver for memory each call.
// Keyed by device only, so models and streams that come and go (a server swapping profiles, a
// test per stream) add nothing: each call takes the lock, points the handle at its stream and at
// a workspace of its own drawn from the pool on that stream (cuBLAS's default workspace would be
// shared by the streams), and enqueues its products. Neither is ever destroyed: the CUDA runtime
// may be gone by the time static destructors run.
struct LibraryState {
  std::mutex lock;
  std::map<int, cublasHandle_t> handles;
  std::map<int, cudaMemPool_t> pools;

  // Called with `lock` held.
  cublasHandle_t handle(int device) {
    cublasHandle_t& h = handles[device];
    if (!h) check_blas(cublasCreate(&h), "cublasCreate");
    return h;
  }
  cudaMemPool_t pool(int device) {
    const std::lock_guard<std::mutex> hold(lock);
    cudaMemPool_t& p = pools[device];
    if (!p) {
      cudaMemPoolProps props{};
      props.allocType = cudaMemAllocationTypePinned;
      props.location.type = cudaMemLocationTypeDevice;
      props.location.id = device;
      MP_GPU_CHECK(cudaMemPoolCreate(&p, &props));
      uint64_t keep = UINT64_MAX;
      MP_GPU_CHECK(cudaMemPoolSetAttribute(p, cudaMemPoolAttrReleaseThreshold, &keep));
    }
    return p;
  }
};

LibraryState& library_state() {
  static LibraryState* state = new LibraryState;  // never destroyed (above)
  return *state;
}

// cuBLAS's workspace for one call: the size NVIDIA recommends for Hopper.
constexpr size_t kBlasWorkspaceBytes = size_t(32) << 20;

// Scratch ordered on the stream: allocated before the products that use it, freed after them.
class StreamScratch {
 public:
  StreamScratch(cudaMemPool_t pool, cudaStream_t stream) : pool_(pool), stream_(stream) {}
  // False, holding nothing and with the runtime's error cleared, where the device has no room for
  // `bytes` more (a paged pool may have taken the rest): the caller then keeps its own kernels.
  bool allocate(size_t bytes) {
    if (bytes == 0) return true;
    const cudaError_t e = cudaMallocFromPoolAsync(&ptr_, bytes, pool_, stream_);
    if (e == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();
      ptr_ = nullptr;
      return false;
    }
    MP_GPU_CHECK(e);
    return true;
  }
  // A free that fails leaves the bytes with the pool; a destructor has no one to tell.
  ~StreamScratch() {
    if (ptr_) (void)cudaFreeAsync(ptr_, stream_);
  }
  StreamScratch(const StreamScratch&) = delete;
  StreamScratch& operator=(const StreamScratch&) = delete;
  uint16_t* bf16() const { return static_cast<uint16_t*>(ptr_); }
  void* bytes() const { return ptr_; }

 private:
  void* ptr_ = nullptr;
  cudaMemPool_t pool_;
  cudaStream_t stream_;
};

// Fills `out` with m's rows as bf16 on stream s.
void dequantize_into(const DeviceMat& m, WeightCode code, uint16_t* out, cudaStream_t s) {
  with_weight_code(code, [&](auto wc) {
    constexpr WeightCode W = decltype(wc)::value;
    if constexpr (W == WeightCode::FP8 || W == WeightCode::FP4)
      launch("gpu matmul (cuBLAS): dequantize", dequantize_kernel<W>, blocks_of(m.rows * m.cols / elems_per_chunk<W>()),
             kThreads, 0, s, m, out);
  });
}
#endif

}  // namespace

#if defined(MOEPAGE_GPU_NVIDIA)
// Entries keyed by the weight's bytes and band; each holds its bf16 copy and the event recorded
// after the copy was made, which every later user's stream waits on (a weight's products may
// run on another stream than its first).
class LibraryWeightCache {
 public:
  explicit LibraryWeightCache(uint64_t budget) : budget_(budget) { MP_GPU_CHECK(cudaGetDevice(&device_)); }
  ~LibraryWeightCache() {
    (void)cudaSetDevice(device_);
    for (auto& [key, e] : entries_) {
      (void)cudaEventSynchronize(e.ready);  // a destructor has no one to tell of a failure
      (void)cudaEventDestroy(e.ready);
      (void)cudaFree(e.bf16);
    }
  }
  LibraryWeightCache(const LibraryWeightCache&) = delete;
  LibraryWeightCache& operator=(const LibraryWeightCache&) = delete;

  // m's bf16 rows, ready for work queued on s after this call; null (nothing queued) where the
  // budget or the device has no room for them.
  const uint16_t* find_or_fill(const DeviceMat& m, WeightCode code, cudaStream_t s) {
    const std::lock_guard<std::mutex> hold(lock_);
    const Key key{m.data, m.row_offset, m.rows, m.cols, int(code)};
    if (auto it = entries_.find(key); it != entries_.end()) {
      MP_GPU_CHECK(cudaStreamWaitEvent(s, it->second.ready, 0));
      return it->second.bf16;
    }
    const uint64_t bytes = uint64_t(m.rows * m.cols) * 2;
    if (held_ + bytes > budget_) return nullptr;
    Entry e;
    const cudaError_t got = cudaMalloc(&e.bf16, bytes);
    if (got == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();
      return nullptr;
    }
    MP_GPU_CHECK(got);
    // Kept only once its fill is queued and marked: a launch that throws leaves no entry behind
    // for a later product to read unfilled.
    try {
      MP_GPU_CHECK(cudaEventCreateWithFlags(&e.ready, cudaEventDisableTiming));
      dequantize_into(m, code, e.bf16, s);
      MP_GPU_CHECK(cudaEventRecord(e.ready, s));
    } catch (...) {
      if (e.ready) (void)cudaEventDestroy(e.ready);
      (void)cudaFree(e.bf16);  // synchronizes: nothing queued may still write it
      throw;
    }
    entries_.emplace(key, e);
    held_ += bytes;
    return e.bf16;
  }
  uint64_t bytes() const {
    const std::lock_guard<std::mutex> hold(lock_);
    return held_;
  }

 private:
  using Key = std::tuple<const uint8_t*, int64_t, int64_t, int64_t, int>;
  struct Entry {
    uint16_t* bf16 = nullptr;
    cudaEvent_t ready = nullptr;
  };
  mutable std::mutex lock_;
  std::map<Key, Entry> entries_;
  uint64_t budget_ = 0, held_ = 0;
  int device_ = 0;
};
#else
// Builds without the library path keep no weights (matmul_library declines every product).
class LibraryWeightCache {
 public:
  explicit LibraryWeightCache(uint64_t) {}
  uint64_t bytes() const { return 0; }
};
#endif

void LibraryWeightCacheDeleter::operator()(LibraryWeightCache* cache) const { delete cache; }

LibraryWeightCachePtr make_library_weight_cache(uint64_t budget_bytes) {
  return budget_bytes ? LibraryWeightCachePtr(new LibraryWeightCache(budget_bytes)) : LibraryWeightCachePtr();
}

uint64_t library_weight_cache_bytes(const LibraryWeightCache& cache) { return cache.bytes(); }

namespace {
#if defined(MOEPAGE_GPU_NVIDIA)
// C[r, t] (+)= A[r] . B[t] for `groups` independent groups: A [rows, cols] bf16 per group, B
// [n, cols] bf16 per group (groups stride_b apart), C float with columns ld_c apart per token and
// groups `rows` apart.
void gemm_groups(cublasHandle_t h, const uint16_t* a, const uint16_t* b, int64_t stride_b, float* c, int64_t rows,
                 int64_t cols, int64_t n, int64_t ld_c, int64_t groups, bool accumulate) {
  const float one = 1.f, zero = 0.f;
  // Column-major view: C (rows x n, ld_c) = A^T (A stored [cols x rows]) times B ([cols x n]).
  check_blas(
      cublasGemmStridedBatchedEx(h, CUBLAS_OP_T, CUBLAS_OP_N, int(rows), int(n), int(cols), &one, a, CUDA_R_16BF,
                                 int(cols), rows * cols, b, CUDA_R_16BF, int(cols), stride_b, accumulate ? &one : &zero,
                                 c, CUDA_R_32F, int(ld_c), rows, int(groups), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
      "cublasGemmStridedBatchedEx");
}

// The weight as the library's operand on stream s: BF16 rows as stored; FP8 and FP4 dequantized
// into the cache where it keeps them (once), else into `scratch` (every product). Null where
// neither has room.
const uint16_t* weight_operand(const DeviceMat& m, WeightCode code, LibraryWeightCache* cache, StreamScratch& scratch,
                               cudaStream_t s) {
  if (code == WeightCode::BF16) return reinterpret_cast<const uint16_t*>(m.data + m.row_offset * m.cols * 2);
  if (cache)
    if (const uint16_t* kept = cache->find_or_fill(m, code, s)) return kept;
  if (!scratch.allocate(size_t(m.rows * m.cols) * 2)) return nullptr;
  dequantize_into(m, code, scratch.bf16(), s);
  return scratch.bf16();
}

// The products of x's parts in turns of kLibraryTokenChunk tokens, the small part first, then the
// rounding added to it (the matrix-core tiles' order too). parts_for(t0, n) makes or finds the
// turn's parts and says where they are and how far apart their groups lie.
template <class PartsFor>
void multiply_turns(cublasHandle_t h, const uint16_t* a, int64_t rows_per_group, int64_t cols, int64_t groups,
                    int64_t n_tokens, float* y, int64_t ld_y, PartsFor&& parts_for) {
  const int64_t chunk = n_tokens < kLibraryTokenChunk ? n_tokens : kLibraryTokenChunk;
  for (int64_t t0 = 0; t0 < n_tokens; t0 += chunk) {
    const int64_t n = n_tokens - t0 < chunk ? n_tokens - t0 : chunk;
    const auto [hi, lo, stride] = parts_for(t0, n);
    if (lo) gemm_groups(h, a, lo, stride, y + t0 * ld_y, rows_per_group, cols, n, ld_y, groups, false);
    gemm_groups(h, a, hi, stride, y + t0 * ld_y, rows_per_group, cols, n, ld_y, groups, lo != nullptr);
  }
}

struct TurnParts {
  const uint16_t* hi;
  const uint16_t* lo;
  int64_t group_stride;
};
#endif

// Whether cuBLAS can take the product's sizes (as int) and its output layout (ld_y below a group's
// rows would be an invalid ldc: an error thrown, not a decline).
bool blas_sizes_ok(const DeviceMat& m, int64_t rows_per_group, int64_t ld_y, int64_t n_tokens) {
  constexpr int64_t kIntMax = 0x7FFFFFFF;
  return n_tokens > 0 && rows_per_group > 0 && m.rows % rows_per_group == 0 && m.rows <= kIntMax && m.cols <= kIntMax &&
         ld_y <= kIntMax && ld_y >= rows_per_group;
}

}  // namespace

bool library_gemm_available() {
#if defined(MOEPAGE_GPU_NVIDIA)
  return matrix_cores_available();  // sm_80+: bf16 products on the matrix cores
#else
  return false;
#endif
}

namespace {

// What library_gemm_applies asks of the weight and the stream, whatever x is: an encoding the
// library path dequantizes, columns it tiles, 16-byte aligned bytes, no graph being captured.
bool weight_takes_library(const DeviceMat& m, WeightCode code, Stream stream) {
  if (!library_gemm_available() || !mma_encoding(code) || !mma_shape_ok(m.cols) || !aligned16(m.data)) return false;
#if defined(MOEPAGE_GPU_NVIDIA)
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  MP_GPU_CHECK(cudaStreamIsCapturing(native(stream), &capture));
  return capture == cudaStreamCaptureStatusNone;
#else
  (void)stream;
  return false;
#endif
}

}  // namespace

bool library_gemm_applies(const DeviceMat& m, WeightCode code, const float* x, int64_t ld_x, int64_t x_group_stride,
                          Stream stream) {
  return aligned16(x) && ld_x % 4 == 0 && x_group_stride % 4 == 0 && weight_takes_library(m, code, stream);
}

bool matmul_library(const DeviceMat& m, WeightCode code, const float* x, int64_t ld_x, int64_t x_group_stride,
                    int64_t rows_per_group, float* y, int64_t ld_y, int64_t n_tokens, bool split,
                    LibraryWeightCache* cache, Stream stream) {
  if (!blas_sizes_ok(m, rows_per_group, ld_y, n_tokens) ||
      !library_gemm_applies(m, code, x, ld_x, x_group_stride, stream))
    return false;
#if defined(MOEPAGE_GPU_NVIDIA)
  int device = 0;
  MP_GPU_CHECK(cudaGetDevice(&device));
  LibraryState& state = library_state();
  const cudaStream_t s = native(stream);
  const cudaMemPool_t pool = state.pool(device);
  const int64_t groups = m.rows / rows_per_group, cols = m.cols;
  const int64_t chunk = n_tokens < kLibraryTokenChunk ? n_tokens : kLibraryTokenChunk;
  const int64_t part = groups * chunk * cols;  // bf16 of one part of x
  StreamScratch weight(pool, s), parts(pool, s), workspace(pool, s);
  if (!parts.allocate(size_t(part * (split ? 2 : 1)) * 2) || !workspace.allocate(kBlasWorkspaceBytes)) return false;
  const uint16_t* a = weight_operand(m, code, cache, weight, s);
  if (!a) return false;
  const std::lock_guard<std::mutex> hold(state.lock);
  const cublasHandle_t h = state.handle(device);
  check_blas(cublasSetStream(h, s), "cublasSetStream");
  check_blas(cublasSetWorkspace(h, workspace.bytes(), kBlasWorkspaceBytes), "cublasSetWorkspace");
  multiply_turns(h, a, rows_per_group, cols, groups, n_tokens, y, ld_y, [&](int64_t t0, int64_t n) {
    uint16_t* hi = parts.bf16();
    uint16_t* lo = split ? hi + part : nullptr;
    launch("gpu matmul (cuBLAS): split x", split_x_kernel, blocks_of(groups * n * cols / 4), kThreads, 0, s,
           x + t0 * ld_x, ld_x, x_group_stride, groups, n, cols, hi, lo);
    return TurnParts{hi, lo, n * cols};
  });
  return true;
#else
  (void)rows_per_group, (void)y, (void)ld_y, (void)split, (void)cache;
  return false;
#endif
}

#if defined(MOEPAGE_GPU_NVIDIA)
struct LibraryPartsProduct::Impl {
  Impl(cudaMemPool_t pool, cudaStream_t stream) : s(stream), weight(pool, stream), workspace(pool, stream) {}
  cudaStream_t s;
  StreamScratch weight, workspace;
  const uint16_t* a = nullptr;
  int device = 0;
  int64_t groups = 0, rows_per_group = 0, cols = 0, ld_y = 0, n_tokens = 0;
};
#else
struct LibraryPartsProduct::Impl {};
#endif

LibraryPartsProduct::LibraryPartsProduct(const DeviceMat& m, WeightCode code, int64_t rows_per_group, int64_t ld_y,
                                         int64_t n_tokens, LibraryWeightCache* cache, Stream stream) {
  if (!blas_sizes_ok(m, rows_per_group, ld_y, n_tokens) || !weight_takes_library(m, code, stream)) return;
#if defined(MOEPAGE_GPU_NVIDIA)
  int device = 0;
  MP_GPU_CHECK(cudaGetDevice(&device));
  auto impl = std::make_unique<Impl>(library_state().pool(device), native(stream));
  if (!impl->workspace.allocate(kBlasWorkspaceBytes)) return;
  impl->a = weight_operand(m, code, cache, impl->weight, impl->s);
  if (!impl->a) return;
  impl->device = device;
  impl->groups = m.rows / rows_per_group;
  impl->rows_per_group = rows_per_group;
  impl->cols = m.cols;
  impl->ld_y = ld_y;
  impl->n_tokens = n_tokens;
  impl_ = std::move(impl);
#else
  (void)code, (void)cache, (void)stream;
#endif
}

LibraryPartsProduct::~LibraryPartsProduct() = default;

void LibraryPartsProduct::run(const uint16_t* parts, float* y) {
  if (!impl_) throw GpuError("gpu matmul (cuBLAS): a product on parts run without its scratch (check ready())");
#if defined(MOEPAGE_GPU_NVIDIA)
  Impl& p = *impl_;
  LibraryState& state = library_state();
  const std::lock_guard<std::mutex> hold(state.lock);
  const cublasHandle_t h = state.handle(p.device);
  check_blas(cublasSetStream(h, p.s), "cublasSetStream");
  check_blas(cublasSetWorkspace(h, p.workspace.bytes(), kBlasWorkspaceBytes), "cublasSetWorkspace");
  const int64_t all = p.groups * p.n_tokens * p.cols;  // one part of every token
  multiply_turns(h, p.a, p.rows_per_group, p.cols, p.groups, p.n_tokens, y, p.ld_y, [&](int64_t t0, int64_t) {
    return TurnParts{parts + t0 * p.cols, parts + all + t0 * p.cols, p.n_tokens * p.cols};
  });
#else
  (void)parts, (void)y;
#endif
}

}  // namespace moepage::ds4::gpu
