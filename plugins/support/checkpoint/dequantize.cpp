#include "checkpoint/dequantize.hpp"

#include <cstring>

#include "checkpoint/safetensors_header.hpp"

namespace moepage::ckpt {
namespace {

[[noreturn]] void fail_for_tensor(std::string_view tensor, const std::string& what) {
  throw CheckpointError("tensor '" + std::string(tensor) + "': " + what);
}

float scale_value(const uint8_t* scale, Dtype scale_dtype, uint64_t index, std::string_view tensor) {
  if (scale_dtype == Dtype::F32) {
    float v;
    std::memcpy(&v, scale + index * 4, 4);
    return v;
  }
  const uint8_t b = scale[index];
  if (e8m0_is_nan(b)) fail_for_tensor(tensor, "scale element " + std::to_string(index) + " is 0xFF, the E8M0 NaN");
  return e8m0_to_float(b);
}

uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

}  // namespace

void convert_to_float(Dtype dtype, const uint8_t* src, uint64_t n, float* out, std::string_view tensor) {
  switch (dtype) {
    case Dtype::F32: std::memcpy(out, src, n * 4); return;
    case Dtype::BF16:
      for (uint64_t i = 0; i < n; ++i) out[i] = bf16_to_float(uint16_t(src[2 * i] | (src[2 * i + 1] << 8)));
      return;
    case Dtype::F16:
      for (uint64_t i = 0; i < n; ++i) out[i] = f16_to_float(uint16_t(src[2 * i] | (src[2 * i + 1] << 8)));
      return;
    default: fail_for_tensor(tensor, "dtype " + std::string(dtype_name(dtype)) + " is not a plain float type");
  }
}

void dequantize_fp8_blocks(const uint8_t* q, uint64_t rows, uint64_t cols, const uint8_t* scale, Dtype scale_dtype,
                           float* out, std::string_view tensor) {
  const uint64_t bcols = ceil_div(cols, 128);
  for (uint64_t r = 0; r < rows; ++r) {
    for (uint64_t bc = 0; bc < bcols; ++bc) {
      const float s = scale_value(scale, scale_dtype, (r / 128) * bcols + bc, tensor);
      const uint64_t c1 = std::min(cols, (bc + 1) * 128);
      for (uint64_t c = bc * 128; c < c1; ++c) out[r * cols + c] = e4m3_to_float(q[r * cols + c]) * s;
    }
  }
}

void dequantize_fp4(const uint8_t* packed, uint64_t rows, uint64_t cols, const uint8_t* scale, float* out,
                    std::string_view tensor) {
  const uint64_t groups = ceil_div(cols, 32);
  for (uint64_t r = 0; r < rows; ++r) {
    for (uint64_t c = 0; c < cols; c += 2) {
      const uint8_t b = packed[r * (cols / 2) + c / 2];
      const float s = scale_value(scale, Dtype::F8_E8M0, r * groups + c / 32, tensor);
      out[r * cols + c] = e2m1_to_float(b & 0xF) * s;
      out[r * cols + c + 1] = e2m1_to_float(b >> 4) * s;
    }
  }
}

std::string scale_name_for(std::string_view weight_name) {
  constexpr std::string_view suffix = ".weight";
  if (weight_name.size() > suffix.size() && weight_name.substr(weight_name.size() - suffix.size()) == suffix) {
    return std::string(weight_name.substr(0, weight_name.size() - suffix.size())) + ".scale";
  }
  return std::string(weight_name) + ".scale";
}

FloatTensor dequantize_tensor(const Checkpoint& ck, std::string_view name) {
  const TensorInfo& t = ck.at(name);
  const std::string where = t.file_path.string() + ": ";
  FloatTensor out;
  try {
    if (t.dtype == Dtype::F32 || t.dtype == Dtype::BF16 || t.dtype == Dtype::F16) {
      out.shape = t.shape;
      out.values.resize(t.elements());
      convert_to_float(t.dtype, ck.view(t).data(), t.elements(), out.values.data(), t.name);
      return out;
    }
    if (t.dtype != Dtype::F8_E4M3 && t.dtype != Dtype::I8) {
      fail_for_tensor(t.name, "dtype " + std::string(dtype_name(t.dtype)) + " cannot be dequantized to float");
    }
    if (t.shape.size() != 2)
      fail_for_tensor(t.name, "quantized weights must be 2-D, shape is " + shape_to_string(t.shape));
    const std::string sname = scale_name_for(t.name);
    const TensorInfo* s = ck.find(sname);
    if (!s) fail_for_tensor(t.name, std::string(dtype_name(t.dtype)) + " weight has no scale tensor '" + sname + "'");
    const uint64_t rows = t.shape[0];
    if (t.dtype == Dtype::F8_E4M3) {
      const uint64_t cols = t.shape[1];
      const std::vector<uint64_t> want{ceil_div(rows, 128), ceil_div(cols, 128)};
      if (s->shape != want || (s->dtype != Dtype::F8_E8M0 && s->dtype != Dtype::F32)) {
        fail_for_tensor(t.name, "scale '" + sname + "' is " + std::string(dtype_name(s->dtype)) + " " +
                                    shape_to_string(s->shape) + ", expected F8_E8M0 " + shape_to_string(want) +
                                    " (128x128 blocks)");
      }
      out.shape = {rows, cols};
      out.values.resize(rows * cols);
      dequantize_fp8_blocks(ck.view(t).data(), rows, cols, ck.view(*s).data(), s->dtype, out.values.data(), t.name);
      return out;
    }
    const uint64_t cols = t.shape[1] * 2;  // FP4: two codes per stored byte
    const std::vector<uint64_t> want{rows, ceil_div(cols, 32)};
    if (s->shape != want || s->dtype != Dtype::F8_E8M0) {
      fail_for_tensor(t.name, "scale '" + sname + "' is " + std::string(dtype_name(s->dtype)) + " " +
                                  shape_to_string(s->shape) + ", expected F8_E8M0 " + shape_to_string(want) +
                                  " (FP4, one scale per 32 inputs)");
    }
    out.shape = {rows, cols};
    out.values.resize(rows * cols);
    dequantize_fp4(ck.view(t).data(), rows, cols, ck.view(*s).data(), out.values.data(), t.name);
    return out;
  } catch (const CheckpointError& e) {
    throw CheckpointError(where + e.what());
  }
}

}  // namespace moepage::ckpt
