// Writing .npy files (numpy's array format), as `moepage run --dump-logits` does and the golden
// tests read them back.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace moepage::output {

// What precedes the data of a version-1 .npy file: the magic, the version, the header length
// and `header_dict` ("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }") padded with
// spaces and a newline so the data starts at a multiple of 64 bytes, as numpy pads it.
std::string npy_preamble(std::string_view header_dict);

// The header dict of a C-order little-endian float32 matrix [rows, cols].
std::string npy_f32_matrix_dict(uint64_t rows, uint64_t cols);

}  // namespace moepage::output
