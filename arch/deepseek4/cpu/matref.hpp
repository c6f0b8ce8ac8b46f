// A weight matrix as the checkpoint stores it, read in place. Supported encodings:
//   F32, BF16, F16                      plain row-major [rows, cols]
//   F8_E4M3 + scale                     e4m3 codes, one e8m0 scale per 128x128 block,
//                                       scale shape [ceil(rows/128), ceil(cols/128)]
//   I8 + scale (FP4)                    two e2m1 codes per byte, low nibble = even column,
//                                       storage [rows, cols/2]; one e8m0 scale per 32 columns,
//                                       scale shape [rows, cols/32]
// row_offset selects a band of rows of a larger matrix (the grouped output projection): row r of
// the view is row row_offset + r of the stored tensor, which also picks the right FP8 block scale.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "dtype/dtype.hpp"

namespace moepage::ds4::cpu {

struct MatRef {
  Dtype dtype = Dtype::F32;
  int64_t rows = 0;
  int64_t cols = 0;
  const std::byte* data = nullptr;
  const std::byte* scale = nullptr;  // e8m0 sidecar for F8_E4M3 and FP4, else null
  int64_t row_offset = 0;
  int64_t total_rows = 0;  // rows of the stored tensor (>= row_offset + rows); 0 means `rows`

  int64_t stored_rows() const { return total_rows ? total_rows : rows; }
  // The band [r0, r0 + n) of this view.
  MatRef row_band(int64_t r0, int64_t n) const {
    MatRef m = *this;
    m.total_rows = stored_rows();
    m.row_offset = row_offset + r0;
    m.rows = n;
    return m;
  }
};

// Empty when the encoding is usable, else a sentence saying what is wrong (names no tensor; the
// caller adds the name).
std::string check_matref(const MatRef& m);

// Decode columns [c0, c0 + n) of view row r into out (floats, scale applied).
void decode_row(const MatRef& m, int64_t r, int64_t c0, int64_t n, float* out);

}  // namespace moepage::ds4::cpu
