#include "output/npy.hpp"

#include <stdexcept>

namespace moepage::output {

std::string npy_preamble(std::string_view header_dict) {
  constexpr size_t kFixed = 10;  // magic (6) + version (2) + header length (2)
  std::string header(header_dict);
  header.append((64 - (kFixed + header.size() + 1) % 64) % 64, ' ');
  header += '\n';
  // Version 1 stores the length in two bytes; the dicts written here are far shorter.
  if (header.size() > 0xffff) throw std::length_error("npy header of " + std::to_string(header.size()) + " bytes");
  std::string out("\x93NUMPY\x01\x00", 8);
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  return out + header;
}

std::string npy_f32_matrix_dict(uint64_t rows, uint64_t cols) {
  return "{'descr': '<f4', 'fortran_order': False, 'shape': (" + std::to_string(rows) + ", " + std::to_string(cols) +
         "), }";
}

}  // namespace moepage::output
