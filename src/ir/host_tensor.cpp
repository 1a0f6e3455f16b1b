//===- host_tensor.cpp - Dense host tensors -------------------------------===//
#include "aotc/ir/host_tensor.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

namespace aotc {

int64_t HostTensor::numel() const {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return n;
}

HostTensor HostTensor::zeros(DType d, Ints sizes) {
  HostTensor t{d, std::move(sizes), {}};
  t.data.assign(static_cast<size_t>(t.numel()), 0.0);
  return t;
}

namespace {
float bf16Round(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffff) > 0x7f800000) return f;  // NaN
  u += 0x7fff + ((u >> 16) & 1);                 // round to nearest even
  u &= 0xffff0000u;
  std::memcpy(&f, &u, 4);
  return f;
}

/// Note [Integer wrap]: a value given to an integer type of fewer than 64
/// bits wraps modulo 2^bits, as C++ conversions (and so the kernels), PyTorch
/// and numpy do: uint8 200 + 100 is 44.  The fraction is dropped first; NaN
/// is 0 and a value beyond the int64 range saturates before wrapping (the
/// conversion would be undefined).
template <typename T>
double wrapTo(double x) {
  if (x != x) return 0.0;
  double t = std::trunc(x);
  if constexpr (std::is_same_v<T, uint64_t>) {
    if (t >= 0x1p64) return static_cast<double>(UINT64_MAX);
    if (t >= 0) return static_cast<double>(static_cast<uint64_t>(t));
  }
  int64_t i = t >= 0x1p63 ? INT64_MAX : t < -0x1p63 ? INT64_MIN : static_cast<int64_t>(t);
  return static_cast<double>(static_cast<T>(i));
}
}  // namespace

double roundTo(DType d, double x) {
  switch (d) {
    case DType::F64: return x;
    case DType::F32: return static_cast<float>(x);
    case DType::F16: return static_cast<double>(static_cast<_Float16>(static_cast<float>(x)));
    case DType::BF16: return bf16Round(static_cast<float>(x));
    // Integer casts saturate (and NaN is 0) rather than overflow: converting
    // an out-of-range double is undefined behaviour in C++.
    case DType::I64: return x != x ? 0.0 : x >= 0x1p63 ? 0x1p63 - 1024 : x < -0x1p63 ? -0x1p63 : std::trunc(x);
    case DType::I32: return x != x ? 0.0 : std::trunc(std::clamp(x, -2147483648.0, 2147483647.0));
    case DType::Bool: return x != 0.0 ? 1.0 : 0.0;
    case DType::I8: return wrapTo<int8_t>(x);
    case DType::I16: return wrapTo<int16_t>(x);
    case DType::U8: return wrapTo<uint8_t>(x);
    case DType::U16: return wrapTo<uint16_t>(x);
    case DType::U32: return wrapTo<uint32_t>(x);
    case DType::U64: return wrapTo<uint64_t>(x);
  }
  return x;
}

}  // namespace aotc
