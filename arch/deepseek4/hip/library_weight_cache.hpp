// The library path's dequantized weights kept between products (arch.library_weight_cache_mib),
// plain C++: the model owns one and its layers' GemmPolicy points at it.
//
// matmul_library dequantizes an FP8 or FP4 weight into bf16 for every product (library_gemm.hpp).
// At a 1,024-token prompt that is 3% of the prefill (0.65 ms of 20.3 on the H100's 4-layer Flash
// slice), and a long prompt in chunks repeats it for every chunk. With a budget, a weight's bf16
// copy made by its first product is kept and every later product of that weight skips the
// dequantization; weights past the budget (or past what the device can give) are dequantized per
// product as before. Flash's attention and shared-expert weights are about 132 M values a layer,
// 264 MB in bf16 (252 MiB; a compressed layer's compressor and indexer add a little), so the whole
// of 43 layers needs about 11 GB: expert slots a paged profile would rather have.
#pragma once
#include <cstdint>
#include <memory>

namespace moepage::ds4::gpu {

class LibraryWeightCache;

struct LibraryWeightCacheDeleter {
  void operator()(LibraryWeightCache* cache) const;
};
using LibraryWeightCachePtr = std::unique_ptr<LibraryWeightCache, LibraryWeightCacheDeleter>;

// A cache of at most budget_bytes of device memory on the current device (budget 0: null). Its
// buffers are freed with it, after the device has finished with them.
LibraryWeightCachePtr make_library_weight_cache(uint64_t budget_bytes);

// Bytes the cache holds now.
uint64_t library_weight_cache_bytes(const LibraryWeightCache& cache);

}  // namespace moepage::ds4::gpu
